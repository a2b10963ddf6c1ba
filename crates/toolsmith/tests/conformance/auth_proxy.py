"""A loopback proxy that adds `serve`'s bearer token to every request.

The conformance suite sends no `Authorization` header and `serve` answers 401 without one
(tokens are never optional), so `.ci/conformance` points the suite here. Each request's head
gets the header and `Connection: close`, so one request is one connection and no later request
on it could go without the token; bodies and streamed answers pass through untouched.

Run: `python auth_proxy.py LISTEN_PORT TARGET_PORT TOKEN_FILE`.
"""

import asyncio
import sys

LISTEN, TARGET, TOKEN_FILE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with open(TOKEN_FILE) as f:
    TOKEN = f.read().strip()


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.write_eof()
        except (OSError, RuntimeError):
            pass


async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
    try:
        head = await client_r.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        client_w.close()
        return
    lines = head[:-4].split(b"\r\n")
    kept = [
        line
        for line in lines[1:]
        if not line.lower().startswith((b"authorization:", b"connection:"))
    ]
    added = [b"Authorization: Bearer " + TOKEN.encode(), b"Connection: close"]
    head = b"\r\n".join([lines[0], *kept, *added]) + b"\r\n\r\n"
    try:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", TARGET)
    except OSError:
        client_w.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        client_w.close()
        return
    server_w.write(head)
    await asyncio.gather(pipe(client_r, server_w), pipe(server_r, client_w))
    for w in (client_w, server_w):
        w.close()


async def main() -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", LISTEN)
    async with server:
        await server.serve_forever()


asyncio.run(main())
