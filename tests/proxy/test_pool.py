"""The proxy's own connections to the model servers (``proxy/pool.py``), against raw servers on
the loopback that answer exactly the bytes each test gives: kept alive and reused, a stale
idle connection replaced once, a new one never sent twice, chunked bodies decoded, interim
answers skipped, a URL's user:password sent as Basic auth, and an exchange given up dropping
its connection."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from dgxmm.proxy.pool import ServerAddress, UpstreamPool, UpstreamUnreachable

REQUEST = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"
OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"

Reader = asyncio.StreamReader
Writer = asyncio.StreamWriter
Handler = Callable[[Reader, Writer, int], Awaitable[None]]


class RawServer:
    """A server on the loopback calling ``handler`` per connection; counts connections and
    requests received."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests = 0
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> RawServer:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer, self.connections)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def address(self) -> ServerAddress:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return ServerAddress.of(f"http://127.0.0.1:{port}")

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        body = await reader.readexactly(length)
        self.requests += 1
        return head + body


def run(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on a loop of its own thread: Playwright's sync API (the browser tests'
    session fixture) keeps a loop running in the main thread, where asyncio.run refuses."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, main).result()


async def whole(pool: UpstreamPool, address: ServerAddress) -> tuple[int, bytes]:
    exchange = await pool.exchange(address, REQUEST)
    try:
        answer = await exchange.answer()
        body = b""
        while (chunk := await exchange.next_chunk()) is not None:
            body += chunk
        return answer.status, body
    finally:
        exchange.close()


def test_answers_come_back_on_one_kept_alive_connection() -> None:
    async def main() -> None:
        async def handler(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int
        ) -> None:
            while True:
                await server.read_request(reader)
                writer.write(OK)

        async with RawServer(handler) as server:
            pool = UpstreamPool()
            for _ in range(5):
                assert await whole(pool, server.address) == (200, b"{}")
            assert (server.connections, server.requests) == (1, 5)
            await pool.aclose()

    run(main())


def test_a_connection_the_server_closed_idle_is_replaced_and_the_request_sent_once_more() -> None:
    async def main() -> None:
        async def handler(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int
        ) -> None:
            await server.read_request(reader)
            writer.write(OK)
            await writer.drain()
            if n == 1:
                # Reads the next request, then closes without a byte of answer: what a server
                # closing an idle connection looks like when a request crossed the close.
                await server.read_request(reader)
                return
            while True:
                await server.read_request(reader)
                writer.write(OK)

        async with RawServer(handler) as server:
            pool = UpstreamPool()
            assert await whole(pool, server.address) == (200, b"{}")
            assert await whole(pool, server.address) == (200, b"{}")
            assert server.connections == 2
            await pool.aclose()

    run(main())


def test_a_new_connection_that_closes_before_answering_is_unreachable_and_not_sent_twice() -> None:
    async def main() -> None:
        async def handler(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int
        ) -> None:
            await server.read_request(reader)  # and closes, answering nothing

        async with RawServer(handler) as server:
            pool = UpstreamPool()
            with pytest.raises(UpstreamUnreachable):
                await whole(pool, server.address)
            await asyncio.sleep(0.05)
            assert (server.connections, server.requests) == (1, 1)
            await pool.aclose()

    run(main())


def test_no_server_is_unreachable() -> None:
    async def main() -> None:
        async with RawServer(lambda *_: asyncio.sleep(0)) as server:
            address = server.address
        pool = UpstreamPool()
        with pytest.raises(UpstreamUnreachable):
            await pool.exchange(address, REQUEST)

    run(main())


def test_a_chunked_answer_after_an_interim_one_is_read_decoded() -> None:
    async def main() -> None:
        async def handler(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int
        ) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nX-Kept: yes\r\nTransfer-Encoding: chunked\r\n\r\n")
            for part in (b"data: 1\n\n", b"data: [DONE]\n\n"):
                writer.write(b"%x\r\n%s\r\n" % (len(part), part))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await server.read_request(reader)  # the connection was kept: a second request
            writer.write(OK)

        async with RawServer(handler) as server:
            pool = UpstreamPool()
            exchange = await pool.exchange(server.address, REQUEST)
            answer = await exchange.answer()
            assert answer.status == 200
            assert (b"X-Kept", b"yes") in answer.headers
            body = b""
            while (chunk := await exchange.next_chunk()) is not None:
                body += chunk
            exchange.close()
            assert body == b"data: 1\n\ndata: [DONE]\n\n"
            assert await whole(pool, server.address) == (200, b"{}")
            assert server.connections == 1
            await pool.aclose()

    run(main())


def test_an_exchange_given_up_drops_its_connection() -> None:
    async def main() -> None:
        closed = asyncio.Event()

        async def handler(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int
        ) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            await writer.drain()
            assert await reader.read() == b""  # the proxy's side closed: no more requests
            closed.set()

        async with RawServer(handler) as server:
            pool = UpstreamPool()
            exchange = await pool.exchange(server.address, REQUEST)
            await exchange.answer()
            assert await exchange.next_chunk() == b"hello"
            exchange.close()  # before the end of the answer
            await asyncio.wait_for(closed.wait(), 5)
            await pool.aclose()

    run(main())


def test_the_address_of_a_url() -> None:
    address = ServerAddress.of("http://user:secret@10.0.0.2:8000/base/")
    assert (address.host, address.port, address.host_header) == ("10.0.0.2", 8000, b"10.0.0.2:8000")
    assert address.path_prefix == b"/base"
    assert address.userinfo == ("user", "secret")
    assert ServerAddress.of("https://models.example").port == 443
    assert ServerAddress.of("http://[::1]:9/").host_header == b"[::1]:9"
    with pytest.raises(ValueError, match="not an http"):
        ServerAddress.of("ftp://host/")


@pytest.mark.parametrize(
    ("answer", "is_whole"),
    [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello", True),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", True),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello", True),  # ends where it closes
        (b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nhello", False),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", False),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX", False),
    ],
    ids=["length", "chunked", "until-close", "short-of-length", "no-last-chunk", "garbled"],
)
def test_a_body_cut_by_the_servers_close_is_not_whole(answer: bytes, is_whole: bool) -> None:
    async def main() -> None:
        async def handler(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int
        ) -> None:
            await server.read_request(reader)
            writer.write(answer)
            await writer.drain()  # then the server closes (RawServer)

        async with RawServer(handler) as server:
            pool = UpstreamPool()
            exchange = await pool.exchange(server.address, REQUEST)
            await exchange.answer()
            body = b""
            while (chunk := await exchange.next_chunk()) is not None:
                body += chunk
            assert body.startswith(b"hello")
            assert exchange.is_whole() is is_whole
            exchange.close()
            await pool.aclose()

    run(main())
