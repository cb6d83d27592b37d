#!/usr/bin/env python3
"""A registry proxy on loopback that delays every blob download: a cold pull
through it takes as long as the test wants, to show how Slurm lives with it.
usage: slow_registry.py LISTEN_PORT UPSTREAM_PORT DELAY_SECONDS"""
import http.client
import http.server
import socketserver
import sys
import time

listen_port, upstream_port, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])


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
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = forward

    def log_message(self, fmt, *args):
        sys.stderr.write("slow-registry: " + fmt % args + "\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


Server(("127.0.0.1", listen_port), Proxy).serve_forever()
