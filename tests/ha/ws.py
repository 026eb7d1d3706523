"""A minimal RFC 6455 websocket client (text frames, ping/pong, close) for Home Assistant's websocket API.

Written by hand because the rig runs with nothing but Debian 12's /usr/bin/python3: the websocket libraries are
either not in the stdlib or (python3-websocket) one more package to install and keep working for ~80 lines of code.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from typing import Any


class WebSocketError(Exception):
    pass


class Connection:
    def __init__(self, sock: socket.socket, leftover: bytes):
        self.sock = sock
        self.buf = leftover

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise WebSocketError("connection closed by the server")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def send_json(self, obj: Any) -> None:
        self._send_frame(0x1, json.dumps(obj).encode())

    def recv_message(self) -> bytes:
        """The next text or binary message (fragments joined); answers pings on the way."""
        message = b""
        while True:
            b0, b1 = self._read(2)
            opcode, fin = b0 & 0x0F, b0 & 0x80
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            if b1 & 0x80:
                raise WebSocketError("server sent a masked frame")
            payload = self._read(n)
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            if opcode == 0x8:
                raise WebSocketError(f"server closed the websocket: {payload[2:]!r}")
            message += payload
            if fin:
                return message

    def recv_json(self, timeout: float | None = 30) -> Any:
        self.sock.settimeout(timeout)
        return json.loads(self.recv_message())

    def close(self) -> None:
        try:
            self._send_frame(0x8, struct.pack("!H", 1000))
        except OSError:
            pass
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def connect(host: str, port: int, path: str, timeout: float = 30) -> Connection:
    sock = socket.create_connection((host, port), timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            sock.close()
            raise WebSocketError("connection closed during the websocket handshake")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0]
    if b" 101 " not in status + b" ":
        sock.close()
        raise WebSocketError(f"websocket handshake refused: {status.decode(errors='replace')}")
    return Connection(sock, rest)
