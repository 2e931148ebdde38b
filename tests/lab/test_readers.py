"""The trace readers: a requests CSV and the Azure LLM inference trace, or a refusal naming
the line and the column.

The Azure files are the real hour of ``../shared/data/azure-llm-2023/`` (Creative Commons
Attribution 4.0), from Patel, Choukse, Zhang, Shah, Goiri, Maleki and Bianchini, "Splitwise:
Efficient generative LLM inference using phase splitting", ISCA 2024.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lab.labkit import azure
from support import at

from dgxmm.errors import InvalidInput
from dgxmm.lab import NO_TOKENS, Trace, read_azure_trace, read_requests_csv
from dgxmm.lab.traces.workloads import AZURE_DIR

# A refusal's field: a line and a column (by name, by position, or the header or row).
FIELD = re.compile(
    r"line [1-9][0-9]*, (timestamp|model|input_tokens|output_tokens|header|row|column [1-9][0-9]*)"
)


def write(tmp_path: Path, text: str, name: str = "requests.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_it_reads_iso_instants_with_offsets_and_sorts_them(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "timestamp,model,input_tokens,output_tokens\n"
        "2026-03-30T08:00:01.5+02:00,llama,812,95\n"
        "2026-03-30T05:59:59Z,qwen,10,\n"
        "2026-03-30T06:00:01.500000+00:00,llama,,7\n",
    )

    trace = read_requests_csv(path)

    assert trace.models == ("llama", "qwen")
    assert trace.at_us.tolist() == [
        at("2026-03-30T05:59:59+00:00"),
        at("2026-03-30T06:00:01.5+00:00"),
        at("2026-03-30T06:00:01.5+00:00"),
    ]
    assert trace.model.tolist() == [1, 0, 0]
    # Equal arrivals keep the file's order: line 2 before line 4.
    assert trace.input_tokens.tolist() == [10, 812, NO_TOKENS]
    assert trace.output_tokens.tolist() == [NO_TOKENS, 95, 7]


def test_it_reads_unix_seconds_exactly_to_the_microsecond(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "model,timestamp\nm,1774850401\nm,1774850400.000001\nm,-1.5\nm,253402214399.999999\n",
    )

    trace = read_requests_csv(path)

    assert trace.at_us.tolist() == [
        -1_500_000,
        1_774_850_400_000_001,
        1_774_850_401_000_000,
        253_402_214_399_999_999,
    ]
    assert trace.input_tokens.tolist() == [NO_TOKENS] * 4


def test_it_reads_one_form_per_line_when_a_file_mixes_them(tmp_path: Path) -> None:
    path = write(tmp_path, "timestamp,model\n1774850400.25,m\n2026-03-30T06:00:00.5Z,m\n\n")

    trace = read_requests_csv(path)

    assert trace.at_us.tolist() == [
        at("2026-03-30T06:00:00.25+00:00"),
        at("2026-03-30T06:00:00.5+00:00"),
    ]


def test_it_reads_a_header_only_file_as_an_empty_trace(tmp_path: Path) -> None:
    trace = read_requests_csv(write(tmp_path, "timestamp,model\n"))

    assert len(trace) == 0
    assert trace.models == ()


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        pytest.param("", "line 1, header", "empty", id="empty-file"),
        pytest.param("\n\n", "line 1, header", "empty", id="blank-lines-only"),
        pytest.param(
            "2026-03-30T06:00:00Z,m\n", "line 1, header", "no known column", id="no-header"
        ),
        pytest.param("timestamp\n1,\n", "line 1, model", "missing", id="header-without-model"),
        pytest.param(
            "model,input_tokens\nm,1\n",
            "line 1, timestamp",
            "missing",
            id="header-without-timestamp",
        ),
        pytest.param(
            "timestamp,model,prompt\n1,m,x\n",
            "line 1, column 3",
            "unknown column 'prompt'",
            id="unknown-column",
        ),
        pytest.param(
            "timestamp,model,model\n1,m,m\n", "line 1, column 3", "twice", id="repeated-column"
        ),
        pytest.param(
            "timestamp,model\n1,m\n2026-03-30T06:00:00,m\n",
            "line 3, timestamp",
            "no offset",
            id="naive-timestamp",
        ),
        pytest.param(
            "timestamp,model\n2026-03-30,m\n", "line 2, timestamp", "no offset", id="date-only"
        ),
        pytest.param(
            "timestamp,model\nyesterday,m\n",
            "line 2, timestamp",
            "neither ISO 8601",
            id="not-a-time",
        ),
        pytest.param(
            "timestamp,model\nnan,m\n", "line 2, timestamp", "not a finite number", id="nan-seconds"
        ),
        pytest.param(
            "timestamp,model\n-inf,m\n",
            "line 2, timestamp",
            "not a finite number",
            id="infinite-seconds",
        ),
        pytest.param(
            "timestamp,model\n1e300,m\n",
            "line 2, timestamp",
            "outside the years",
            id="seconds-past-9999",
        ),
        pytest.param(
            "timestamp,model\n-62135596800,m\n",
            "line 2, timestamp",
            "outside the years",
            id="seconds-at-year-1",
        ),
        pytest.param(
            "timestamp,model\n0001-01-01T00:00:00+00:00,m\n",
            "line 2, timestamp",
            "outside the years",
            id="iso-at-year-1",
        ),
        pytest.param(
            "timestamp,model\n9999-12-31T23:00:00-05:00,m\n",
            "line 2, timestamp",
            "outside the years",
            id="iso-past-9999",
        ),
        pytest.param("timestamp,model\n1,m\n2,  \n", "line 3, model", "blank", id="blank-model"),
        pytest.param(
            "timestamp,model,input_tokens\n1,m,-3\n",
            "line 2, input_tokens",
            "not a whole number",
            id="negative-tokens",
        ),
        pytest.param(
            "timestamp,model,output_tokens\n1,m,2.5\n",
            "line 2, output_tokens",
            "not a whole number",
            id="fractional-tokens",
        ),
        pytest.param(
            "timestamp,model,output_tokens\n1,m,9223372036854775808\n",
            "line 2, output_tokens",
            "2**63-1",
            id="tokens-past-int64",
        ),
        pytest.param("timestamp,model\n1,m\n2\n", "line 3, model", "missing", id="short-line"),
        pytest.param(
            "timestamp,model\n1,m,extra\n", "line 2, column 3", "has no column", id="long-line"
        ),
        pytest.param(
            "timestamp,model\n1,m\n\n\nlater,m\n",
            "line 5, timestamp",
            "neither",
            id="line-counts-blank-lines",
        ),
        pytest.param(
            'timestamp,model\n1,"two\nlines"\nbad,m\n',
            "line 4, timestamp",
            "neither",
            id="line-counts-quoted-newlines",
        ),
        pytest.param(
            "timestamp,model,input_tokens\n1,m,x\nbad,m,1\n",
            "line 2, input_tokens",
            "not a whole",
            id="earliest-line-named",
        ),
        pytest.param(
            "timestamp,model\nbad,m\n1,m,3\n",
            "line 2, timestamp",
            "neither",
            id="earlier-bad-value-before-long-line",
        ),
    ],
)
def test_it_refuses_a_wrong_file_naming_the_line_and_column(
    tmp_path: Path, text: str, field: str, words: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        read_requests_csv(write(tmp_path, text))

    assert refused.value.field == field
    assert words in refused.value.message


def test_it_refuses_text_that_is_not_utf8_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("timestamp,model\n1,m\n2,café\n".encode("latin-1"))

    with pytest.raises(InvalidInput) as refused:
        read_requests_csv(path)

    assert refused.value.field == "line 3, row"


def test_it_names_the_line_of_bytes_that_are_not_utf8_far_into_the_file(tmp_path: Path) -> None:
    # Past the first MiB, where the file is read as a stream, not looked at whole.
    rows = "".join(f"{k},model\n" for k in range(200_000))
    path = tmp_path / "late.csv"
    path.write_bytes(f"timestamp,model\n{rows}5,caf\xe9\n".encode("latin-1"))

    with pytest.raises(InvalidInput) as refused:
        read_requests_csv(path)

    assert refused.value.field == "line 200002, row"


CHUNKED = (
    "timestamp,model,input_tokens\n"
    "2026-03-30T08:00:05Z,b,5\n"
    "2026-03-30T08:00:01Z,a,\n"
    "1774857602,c,7\n"  # 08:00:02Z, in Unix seconds: a chunk of one form, another of another
    "\n"
    "2026-03-30T08:00:01Z,b,9\n"
    "2026-03-30T08:00:00Z,a,1\n"
)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5], ids=lambda n: f"chunk-{n}")
def test_a_file_read_in_chunks_reads_as_one_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    whole = read_requests_csv(write(tmp_path, CHUNKED))
    monkeypatch.setattr("dgxmm.lab.traces.records.CHUNK", chunk)

    parts = read_requests_csv(write(tmp_path, CHUNKED))

    assert parts.models == whole.models == ("a", "b", "c")
    for column in ("at_us", "model", "input_tokens", "output_tokens"):
        assert getattr(parts, column).tolist() == getattr(whole, column).tolist(), column
    assert parts.input_tokens.tolist() == [1, NO_TOKENS, 9, 7, 5]  # ties keep the file's order


@pytest.mark.parametrize("chunk", [1, 2, 3], ids=lambda n: f"chunk-{n}")
@pytest.mark.parametrize(
    ("text", "field"),
    [
        (CHUNKED + "yesterday,a,1\n2026-03-30T08:00:00Z,,1\n", "line 8, timestamp"),
        (CHUNKED + "2026-03-30T08:00:00Z,a\n2026-03-30T08:00:00Z,a,x\n", "line 8, input_tokens"),
        (CHUNKED + "2026-03-30T08:00:00Z,a,1,2\nnever,a,1\n", "line 8, column 4"),
    ],
    ids=["bad-value", "short-line", "long-line"],
)
def test_a_file_read_in_chunks_names_the_earliest_bad_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, text: str, field: str
) -> None:
    monkeypatch.setattr("dgxmm.lab.traces.records.CHUNK", chunk)

    with pytest.raises(InvalidInput) as refused:
        read_requests_csv(write(tmp_path, text))

    assert refused.value.field == field


def test_it_refuses_a_missing_file_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as refused:
        read_requests_csv(tmp_path / "nowhere.csv")

    assert refused.value.field == "path"
    assert "nowhere.csv" in refused.value.message


_CELLS = st.sampled_from(
    [
        "timestamp",
        "model",
        "input_tokens",
        "output_tokens",
        "TIMESTAMP",
        "1774850400",
        "1774850400.5",
        "-0",
        "nan",
        "1e400",
        "2026-03-29T02:30:00+01:00",
        "2026-03-29T02:30:00",
        "0001-01-01T00:00:00+00:00",
        "m",
        "",
        "   ",
        "7",
        "-7",
        '"',
        "a,b",
        "\n",
        "\r",
        "\x00",
        "9223372036854775808",
    ]
)
_CSV = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=200),
    st.lists(st.lists(_CELLS, max_size=5), max_size=6).map(
        lambda rows: "\n".join(",".join(row) for row in rows)
    ),
)


@given(text=_CSV)
def test_any_text_reads_into_a_sorted_trace_or_is_refused_naming_a_line_and_column(
    text: str,
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), text)
        refused: InvalidInput | None = None
        try:
            trace = read_requests_csv(path)
        except InvalidInput as error:
            refused = error
    if refused is not None:
        assert FIELD.fullmatch(refused.field), refused.field
        return
    assert isinstance(trace, Trace)
    assert bool(np.all(np.diff(trace.at_us) >= 0))
    assert len(trace.models) == len(set(trace.models))


@pytest.mark.parametrize(
    ("name", "requests", "first", "last"),
    [
        pytest.param(
            "AzureLLMInferenceTrace_conv.csv",
            19_366,
            "2023-11-16T18:15:46.680590+00:00",
            "2023-11-16T19:14:08.402527+00:00",
            id="conv",
        ),
        pytest.param(
            "AzureLLMInferenceTrace_code.csv",
            8_819,
            "2023-11-16T18:17:03.979960+00:00",
            "2023-11-16T19:14:19.928016+00:00",
            id="code",
        ),
    ],
)
def test_it_reads_the_real_azure_hour(name: str, requests: int, first: str, last: str) -> None:
    trace = azure(AZURE_DIR / name, "chat")

    assert len(trace) == requests
    assert trace.models == ("chat",)
    assert trace.span_us == (at(first), at(last))
    assert int(trace.input_tokens.min()) >= 0
    assert int(trace.output_tokens.min()) >= 0
    assert NO_TOKENS not in trace.input_tokens


def test_it_reads_the_first_azure_line_as_utc_with_its_token_counts() -> None:
    trace = azure(AZURE_DIR / "AzureLLMInferenceTrace_conv.csv", "chat")

    # The file's line 2: 2023-11-16 18:15:46.6805900,374,44
    assert (int(trace.at_us[0]), int(trace.input_tokens[0]), int(trace.output_tokens[0])) == (
        at("2023-11-16T18:15:46.680590+00:00"),
        374,
        44,
    )


def test_it_rounds_the_azure_fraction_to_the_microsecond(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.6805905,1,2\n"
        "2023-11-16 18:15:46.6805904,1,2\n"
        "2023-11-16 18:15:47,1,2\n",
    )

    assert read_azure_trace(path, "chat").at_us.tolist() == [
        at("2023-11-16T18:15:46.680590+00:00"),
        at("2023-11-16T18:15:46.680591+00:00"),
        at("2023-11-16T18:15:47+00:00"),
    ]


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        pytest.param("", "line 1, header", "empty", id="empty-file"),
        pytest.param("timestamp,model\n", "line 1, column 1", "'TIMESTAMP'", id="dgxmm-header"),
        pytest.param(
            "TIMESTAMP,ContextTokens\n", "line 1, column 3", "'GeneratedTokens'", id="short-header"
        ),
        pytest.param(
            "TIMESTAMP,ContextTokens,GeneratedTokens,x\n",
            "line 1, column 4",
            "unknown",
            id="long-header",
        ),
        pytest.param(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16T18:15:46Z,1,2\n",
            "line 2, TIMESTAMP",
            "not YYYY",
            id="iso-with-zone",
        ),
        pytest.param(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-16 18:15:46.0,1,2\n",
            "line 2, TIMESTAMP",
            "month",
            id="no-such-month",
        ),
        pytest.param(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.0,-1,2\n",
            "line 2, ContextTokens",
            "not a whole",
            id="negative-context",
        ),
        pytest.param(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.0,1,\n",
            "line 2, GeneratedTokens",
            "missing",
            id="missing-generated",
        ),
        pytest.param(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.0,1\n",
            "line 2, GeneratedTokens",
            "missing",
            id="short-line",
        ),
    ],
)
def test_it_refuses_a_wrong_azure_file_naming_the_line_and_column(
    tmp_path: Path, text: str, field: str, words: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        read_azure_trace(write(tmp_path, text), "chat")

    assert refused.value.field == field
    assert words in refused.value.message


def test_it_refuses_an_azure_trace_for_no_model() -> None:
    with pytest.raises(InvalidInput) as refused:
        read_azure_trace(AZURE_DIR / "AzureLLMInferenceTrace_code.csv", " ")

    assert refused.value.field == "model"
