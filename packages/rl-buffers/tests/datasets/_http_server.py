"""A small HTTP file server for the download tests (run as a script, in its own process).

Usage: python _http_server.py FOLDER PORT_FILE LOG_FILE [BYTES_PER_SECOND]

Serves the files of FOLDER, honouring ``Range: bytes=N-`` requests (206 replies), at most
BYTES_PER_SECOND (default: unlimited), so that a test can stop a transfer half-way. Writes
its port to PORT_FILE once listening and one line per request (path and Range header) to
LOG_FILE.
"""

from __future__ import annotations

import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

CHUNK = 8192


class Handler(BaseHTTPRequestHandler):
    folder: Path
    log_file: Path
    rate: int

    def do_GET(self) -> None:
        file = self.folder / unquote(self.path).lstrip("/")
        ranged = self.headers.get("Range")
        with open(self.log_file, "a") as log:
            log.write(f"{self.path} {ranged}\n")
        if not file.is_file():
            self.send_error(404)
            return
        data = file.read_bytes()
        start = int(ranged.removeprefix("bytes=").split("-")[0]) if ranged else 0
        if start >= len(data):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(data)}")
            self.end_headers()
            return
        self.send_response(206 if ranged else 200)
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        for offset in range(start, len(data), CHUNK):
            self.wfile.write(data[offset : offset + CHUNK])
            self.wfile.flush()
            if self.rate:
                time.sleep(CHUNK / self.rate)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    Handler.folder, port_file, Handler.log_file = (Path(arg) for arg in sys.argv[1:4])
    Handler.rate = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = port_file.with_name(port_file.name + ".tmp")
    tmp.write_text(str(server.server_address[1]))
    tmp.rename(port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
