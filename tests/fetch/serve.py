#!/usr/bin/env python3
"""A local HTTP server for the fetch tests (Python's http.server, 127.0.0.1).

Usage: serve.py DIR LOG. Prints "PORT <n>" on its first stdout line, then
serves DIR until it is killed, appending each request path to LOG. Paths:
  /<name>             the file DIR/<name>
  /truncated/<name>   announces the whole length, sends half, closes: an
                      interrupted transfer as the client sees it
  /corrupt/<name>     the file with one byte in the middle flipped
  /slow/<name>        sends half, then stalls for a minute (to interrupt)
Anything else is 404.
"""
import http.server
import os
import sys
import time

ROOT, LOG = sys.argv[1], sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep the test's output clean
        pass

    def do_GET(self):
        with open(LOG, "a") as log:
            log.write(self.path + "\n")
        mode, name = "plain", self.path.lstrip("/")
        for prefix in ("truncated", "corrupt", "slow"):
            if name.startswith(prefix + "/"):
                mode, name = prefix, name[len(prefix) + 1:]
        path = os.path.join(ROOT, name)
        if "/.." in "/" + name or not os.path.isfile(path):
            self.send_error(404)
            return
        with open(path, "rb") as f:
            body = bytearray(f.read())
        if mode == "corrupt" and body:
            body[len(body) // 2] ^= 0x01
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "slow":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            time.sleep(60)
            return
        if mode == "truncated":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("PORT", server.server_address[1], flush=True)
server.serve_forever()
