"""The Prometheus text parser: vLLM's pages, the format's corners, and any text at all."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgxmm.errors import InvalidInput
from dgxmm.fleet import Series, parse_exposition
from dgxmm.standin.exposition import format_series, format_value

VLLM_PAGE = """\
# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 8123.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="m"} 1.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 4.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="m"} 7.25
vllm:e2e_request_latency_seconds_created{engine="0",model_name="m"} 1.7300000001e+09
"""


def test_it_reads_a_vllm_page() -> None:
    page = parse_exposition(VLLM_PAGE)
    assert page.types["vllm:num_requests_running"] == "gauge"
    assert page.types["vllm:e2e_request_latency_seconds"] == "histogram"
    (running,) = page.named("vllm:num_requests_running")
    assert running.value == 2.0
    assert running.label("model_name") == "meta-llama/Llama-3.1-8B-Instruct"
    assert running.label("engine") == "0"
    assert running.label("nothing") is None
    buckets = page.named("vllm:e2e_request_latency_seconds_bucket")
    assert [b.label("le") for b in buckets] == ["0.3", "+Inf"]
    assert page.named("vllm:e2e_request_latency_seconds_created")[0].value == 1730000000.1
    assert len(page.series) == 7


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("up 1", Series(name="up", value=1.0), id="bare"),
        pytest.param(
            'a{x="q\\"uote"} 2',
            Series(name="a", labels=(("x", 'q"uote'),), value=2.0),
            id="escaped-quote",
        ),
        pytest.param(
            'a{x="back\\\\slash",y="new\\nline"} 3',
            Series(name="a", labels=(("x", "back\\slash"), ("y", "new\nline")), value=3.0),
            id="escaped-backslash-and-newline",
        ),
        pytest.param(
            'a{x="}{,= "} 4', Series(name="a", labels=(("x", "}{,= "),), value=4.0), id="syntax"
        ),
        pytest.param(
            'a{ x = "1" , } 5', Series(name="a", labels=(("x", "1"),), value=5.0), id="blanks"
        ),
        pytest.param('a{x="1"}6', Series(name="a", labels=(("x", "1"),), value=6.0), id="tight"),
        pytest.param("a{} 7", Series(name="a", value=7.0), id="no-labels"),
        pytest.param("a +Inf", Series(name="a", value=math.inf), id="plus-inf"),
        pytest.param("a -Inf", Series(name="a", value=-math.inf), id="minus-inf"),
        pytest.param("a 1e3", Series(name="a", value=1000.0), id="exponent"),
        pytest.param("a .5", Series(name="a", value=0.5), id="leading-dot"),
        pytest.param(
            "a 1 1700000000000", Series(name="a", value=1.0, timestamp_ms=1700000000000), id="ts"
        ),
        pytest.param("  a\t8  ", Series(name="a", value=8.0), id="tabs-and-spaces"),
        pytest.param(
            'a{x="1"} 9 # {trace_id="abc"} 0.5',
            Series(name="a", labels=(("x", "1"),), value=9.0),
            id="exemplar",
        ),
        pytest.param("ns:sub_name 10", Series(name="ns:sub_name", value=10.0), id="colons"),
    ],
)
def test_it_reads_each_corner_of_the_format(line: str, expected: Series) -> None:
    assert parse_exposition(line + "\n").series == (expected,)


def test_it_reads_nan() -> None:
    (series,) = parse_exposition("a NaN\n").series
    assert math.isnan(series.value)


def test_it_skips_comments_blank_lines_and_eof() -> None:
    page = parse_exposition("# just a comment\n\n#\n# TYPE a counter\na 1\r\n# EOF\n")
    assert page.series == (Series(name="a", value=1.0),)
    assert page.types == {"a": "counter"}


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        pytest.param('a 1\n{x="1"} 2\n', 2, "no metric name", id="no-name"),
        pytest.param("a\n", 1, "no value", id="no-value"),
        pytest.param("a one\n", 1, "value 'one' is not a number", id="not-a-number"),
        pytest.param("a 1_000\n", 1, "is not a number", id="underscore"),
        pytest.param('a{x="1} 1\n', 1, "no closing quote", id="unclosed-quote"),
        pytest.param('a{x="\\t"} 1\n', 1, "bad escape", id="bad-escape"),
        pytest.param("a{x=1} 1\n", 1, "no quoted value", id="unquoted"),
        pytest.param('a{x="1" y="2"} 1\n', 1, "expected , or }", id="no-comma"),
        pytest.param('a{1x="1"} 1\n', 1, "bad label name", id="label-name"),
        pytest.param("a 1 2 3\n", 1, "unexpected '3'", id="too-many-fields"),
        pytest.param("a 1 1.5\n", 1, "timestamp", id="fractional-timestamp"),
        pytest.param("a-b 1\n", 1, "unexpected '-'", id="dash-in-name"),
    ],
)
def test_it_refuses_a_malformed_line_naming_it(text: str, line: int, problem: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_exposition(text)
    assert refused.value.field == f"metrics line {line}"
    assert problem in refused.value.message


def test_written_values_read_back() -> None:
    assert format_value(math.inf) == "+Inf"
    assert format_value(-math.inf) == "-Inf"
    assert format_value(math.nan) == "NaN"
    assert format_value(3) == "3.0"
    assert format_series("a", (), 1.5) == "a 1.5"
    assert format_series("a", (("x", 'q"\\\n'),), 1) == 'a{x="q\\"\\\\\\n"} 1.0'


metric_names = st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,20}", fullmatch=True)
label_names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,10}", fullmatch=True)
label_values = st.text(max_size=30)
values = st.floats(allow_nan=True, allow_infinity=True)
series_strategy = st.builds(
    lambda name, labels, value, ts: Series(
        name=name, labels=tuple(labels.items()), value=value, timestamp_ms=ts
    ),
    metric_names,
    st.dictionaries(label_names, label_values, max_size=4),
    values,
    st.none() | st.integers(min_value=-(2**62), max_value=2**62),
)
blanks = st.sampled_from([" ", "\t", "  ", " \t "])


def render(series: Series, blank: str, comma: bool) -> str:
    """Write a line the way an exporter might: our own writer, independent of format_series."""
    escaped = [
        f'{k}="' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
        for k, v in series.labels
    ]
    braces = "{" + ",".join(escaped) + ("," if comma and escaped else "") + "}" if escaped else ""
    value = "NaN" if math.isnan(series.value) else repr(series.value).replace("inf", "Inf")
    value = "+Inf" if value == "Inf" else value
    stamp = "" if series.timestamp_ms is None else f"{blank}{series.timestamp_ms}"
    return f"{series.name}{braces}{blank}{value}{stamp}"


def same(a: Series, b: Series) -> bool:
    if math.isnan(a.value) or math.isnan(b.value):
        return math.isnan(a.value) and math.isnan(b.value) and a.labels == b.labels
    return a == b


@given(st.lists(st.tuples(series_strategy, blanks, st.booleans(), st.booleans()), max_size=12))
def test_any_written_page_reads_back(lines: list[tuple[Series, str, bool, bool]]) -> None:
    text = ""
    for series, blank, comma, comment in lines:
        if comment:
            text += f"# HELP {series.name} some help\n# TYPE {series.name} gauge\n\n"
        text += render(series, blank, comma) + "\n"
    parsed = parse_exposition(text).series
    assert len(parsed) == len(lines)
    for got, (wanted, _, _, _) in zip(parsed, lines, strict=True):
        assert same(got, wanted), (got, wanted)


@given(series_strategy)
def test_format_series_reads_back(series: Series) -> None:
    line = format_series(series.name, series.labels, series.value)
    (parsed,) = parse_exposition(line).series
    assert same(parsed, Series(name=series.name, labels=series.labels, value=series.value))


@given(st.text(max_size=200))
def test_any_text_parses_or_is_refused_with_invalid_input(text: str) -> None:
    try:
        page = parse_exposition(text)
    except InvalidInput as err:
        refused = err.field
    else:
        refused = ""
        assert all(series.name for series in page.series)
    assert refused == "" or refused.startswith("metrics line ")


@given(series_strategy, st.booleans())
def test_a_line_reads_the_same_with_blanks_inside_its_braces(series: Series, comma: bool) -> None:
    # Plain lines take a quicker reading than lines with blanks or escapes in their labels;
    # both must give the same series.
    line = render(Series(name=series.name, labels=series.labels, value=series.value), " ", comma)
    spaced = line.replace("{", "{ ", 1) if series.labels else line  # a blank: the careful way
    (plain,) = parse_exposition(line).series
    (careful,) = parse_exposition(spaced).series
    assert same(plain, careful), (line, spaced)
