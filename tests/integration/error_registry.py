#!/usr/bin/env python3
"""A registry stand-in on loopback that answers every manifest request of
repository STATUS/NAME with that HTTP status, as registries say no: 401 with a
Basic challenge, 403, 404 with the distribution error body, 429 with
Retry-After. With --tls CERT KEY it speaks HTTPS with that (untrusted)
certificate. Each request is logged to stderr, one line.
usage: error_registry.py PORT [--tls CERT KEY]"""
import http.server
import json
import socketserver
import ssl
import sys

port = int(sys.argv[1])

ERRORS = {
    401: ("UNAUTHORIZED", "authentication required", {"WWW-Authenticate": 'Basic realm="crisp-test"'}),
    403: ("DENIED", "requested access to the resource is denied", {}),
    404: ("MANIFEST_UNKNOWN", "manifest unknown", {}),
    429: ("TOOMANYREQUESTS", "rate limit exceeded", {"Retry-After": "1"}),
}


class Registry(http.server.BaseHTTPRequestHandler):
    def answer(self):
        parts = self.path.split("?")[0].strip("/").split("/")
        if parts == ["v2"]:
            return self.reply(200, {}, {})
        status = int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 404
        code, message, headers = ERRORS.get(status, ERRORS[404])
        self.reply(status, {"errors": [{"code": code, "message": message}]}, headers)

    def reply(self, status, body, headers):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Docker-Distribution-Api-Version", "registry/2.0")
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = answer

    def log_message(self, fmt, *args):
        sys.stderr.write("error-registry: " + fmt % args + "\n")
        sys.stderr.flush()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", port), Registry)
if len(sys.argv) == 5 and sys.argv[2] == "--tls":
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[3], sys.argv[4])
    server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
