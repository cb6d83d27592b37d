#!/usr/bin/env python3
"""A registry proxy on loopback that delays every blob download and, given a
rate, trickles blob bodies at that many bytes a second: a cold pull through it
takes as long as the test wants, to show how Slurm lives with it.
usage: slow_registry.py LISTEN_PORT UPSTREAM_PORT DELAY_SECONDS [BYTES_PER_SECOND]"""
import http.client
import http.server
import socketserver
import sys
import time

listen_port, upstream_port, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
rate = int(sys.argv[4]) if len(sys.argv) > 4 else 0


class Proxy(http.server.BaseHTTPRequestHandler):
    def forward(self):
        if "/blobs/" in self.path and self.command == "GET":
            time.sleep(delay)
        upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
        upstream.request(self.command, self.path, headers={k: v for k, v in self.headers.items() if k.lower() != "host"})
        resp = upstream.getresponse()
        body = resp.read()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            # HEAD answers carry the size of what a GET would return.
            if k.lower() not in ("transfer-encoding", "connection") and (k.lower() != "content-length" or self.command == "HEAD"):
                self.send_header(k, v)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if not rate or "/blobs/" not in self.path:
            self.wfile.write(body)
            return
        chunk = max(1, rate // 10)
        for i in range(0, len(body), chunk):
            self.wfile.write(body[i:i + chunk])
            self.wfile.flush()
            time.sleep(0.1)

    do_GET = do_HEAD = forward

    def log_message(self, fmt, *args):
        sys.stderr.write("slow-registry: " + fmt % args + "\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


Server(("127.0.0.1", listen_port), Proxy).serve_forever()
