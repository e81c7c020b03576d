"""The real servers the remote-shard tests fetch from, started by the tests
in their scratch directories: s3rver (an S3-compatible server from npm,
installed by scripts/install-deps.sh into tests/remote/node_modules) and
nginx (Debian's), serving files with range requests. Plus a TCP relay that
cuts its first connections after a number of bytes: the server behind it
is still the real one.

s3rver 3.7.1 checks that a request is signed with an access key it knows
(an unknown key is 403 InvalidAccessKeyId) but does not recompute SigV4
signatures; test_remote.py therefore also recomputes the signatures of the
daemon's requests with botocore's signer (the AWS SDK's own).
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

SOURCE = os.environ.get("STOKER_SOURCE_DIR",
                        os.path.join(os.path.dirname(__file__), "..", ".."))
S3RVER = os.path.join(SOURCE, "tests", "remote", "node_modules", "s3rver",
                      "bin", "s3rver.js")
ACCESS_KEY = "S3RVER"  # s3rver's built-in account
SECRET_KEY = "S3RVER"


def _require(path, what):
    if not os.path.exists(path):
        raise RuntimeError(f"{what} is missing ({path}): run "
                           "scripts/install-deps.sh")


def _wait_port(port, process, log, deadline=20):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if process.poll() is not None:
            raise RuntimeError("server exited: " + open(log).read())
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("server did not start: " + open(log).read())


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """s3rver on 127.0.0.1, with one bucket; objects put with curl --aws-sigv4."""

    def __init__(self, directory, bucket="data"):
        _require(S3RVER, "s3rver")
        self.dir = directory
        self.bucket = bucket
        os.makedirs(os.path.join(directory, "store"), exist_ok=True)
        self.log_path = os.path.join(directory, "s3rver.log")
        self.port = None
        self.start()

    def start(self):
        port = self.port or 0
        self.log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            ["node", S3RVER, "-d", os.path.join(self.dir, "store"),
             "-a", "127.0.0.1", "-p", str(port), "--configure-bucket",
             self.bucket], stdout=self.log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 20
        while self.port is None:
            found = re.search(r"listening on 127\.0\.0\.1:(\d+)",
                              open(self.log_path).read())
            if found:
                self.port = int(found.group(1))
            elif self.process.poll() is not None or time.monotonic() > end:
                raise RuntimeError("s3rver: " + open(self.log_path).read())
            else:
                time.sleep(0.05)
        _wait_port(self.port, self.process, self.log_path)

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def put(self, key, path, access_key=ACCESS_KEY):
        subprocess.run(
            ["curl", "-sS", "--fail", "--aws-sigv4", "aws:amz:us-east-1:s3",
             "--user", f"{access_key}:{SECRET_KEY}",
             "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-T", path,
             f"{self.endpoint}/{self.bucket}/{key}", "-o", os.devnull],
            check=True)

    def requests(self, method_path):
        """How many requests s3rver logged whose line holds `method_path`."""
        return open(self.log_path).read().count(method_path)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)
        self.log.close()


NGINX_CONF = """
worker_processes 1;
{user}
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 64; }}
http {{
  log_format fetch '$request_method $uri $status $body_bytes_sent "$http_range"';
  access_log {dir}/access.log fetch;
  client_body_temp_path {dir}/tmp;
  proxy_temp_path {dir}/tmp;
  fastcgi_temp_path {dir}/tmp;
  uwsgi_temp_path {dir}/tmp;
  scgi_temp_path {dir}/tmp;
  server {{
    listen 127.0.0.1:{port};
    root {root};
    location /slow/ {{ alias {root}/; limit_rate {slow_rate}; }}
    location /forbidden/ {{ return 403; }}
    location /broken/ {{ return 500; }}
  }}
  server {{
    listen 127.0.0.1:{tls_port} ssl;
    ssl_certificate {dir}/cert.pem;
    ssl_certificate_key {dir}/key.pem;
    root {root};
  }}
}}
"""


class Nginx:
    """nginx serving `root` at /, and at /slow/ rate-limited; /forbidden/
    answers 403 and /broken/ 500. The same files over https on tls_port,
    with a certificate of its own for 127.0.0.1 (`cert`, made with openssl)."""

    def __init__(self, directory, root, slow_rate="64k"):
        self.binary = shutil.which("nginx") or "/usr/sbin/nginx"
        _require(self.binary, "nginx")
        self.dir = directory
        self.root = root
        os.makedirs(os.path.join(directory, "tmp"), exist_ok=True)
        self.port = _free_port()
        self.tls_port = _free_port()
        self.cert = os.path.join(directory, "cert.pem")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
             "-days", "2", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1",
             "-keyout", os.path.join(directory, "key.pem"), "-out", self.cert],
            check=True, capture_output=True)
        user = "user root root;" if os.geteuid() == 0 else ""
        with open(os.path.join(directory, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF.format(user=user, dir=directory, port=self.port,
                                      tls_port=self.tls_port, root=root,
                                      slow_rate=slow_rate))
        self.start()

    def start(self):
        log = os.path.join(self.dir, "stderr.log")
        with open(log, "a") as err:
            self.process = subprocess.Popen(
                [self.binary, "-p", self.dir, "-c",
                 os.path.join(self.dir, "nginx.conf"), "-g", "daemon off;"],
                stdout=subprocess.DEVNULL, stderr=err)
        _wait_port(self.port, self.process, log)

    def kill(self):
        """SIGKILL the master and its worker: connections cut mid-transfer."""
        pid = self.process.pid
        for line in subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)],
                                   capture_output=True, text=True).stdout.split():
            os.kill(int(line), signal.SIGKILL)
        self.process.kill()
        self.process.wait()

    def url(self, path=""):
        return f"http://127.0.0.1:{self.port}/{path}"

    def access_log(self):
        path = os.path.join(self.dir, "access.log")
        return open(path).read().splitlines() if os.path.exists(path) else []

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


class CuttingRelay:
    """A TCP relay to 127.0.0.1:`port` that cuts a connection once `after`
    bytes of answers went through it, the first `cuts` times that happens;
    after that everything passes whole. `on_cut` runs after each cut. It keeps what
    clients sent (`requests`)."""

    def __init__(self, port, after=0, cuts=0, on_cut=None):
        self.target = port
        self.after = after
        self.cuts = cuts
        self.on_cut = on_cut
        self.cut = 0  # connections cut so far
        self.lock = threading.Lock()
        self.requests = bytearray()  # every byte clients sent, in order
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,),
                             daemon=True).start()

    def _serve(self, client):
        upstream = socket.create_connection(("127.0.0.1", self.target))

        def forward_requests():
            try:
                while data := client.recv(65536):
                    self.requests += data
                    upstream.sendall(data)
            except OSError:
                pass

        threading.Thread(target=forward_requests, daemon=True).start()
        sent = 0
        cut = False
        try:
            while data := upstream.recv(65536):
                if sent + len(data) >= self.after:
                    with self.lock:
                        cut = self.cut < self.cuts
                        self.cut += cut
                if cut:
                    client.sendall(data[:max(0, self.after - sent)])
                    break
                client.sendall(data)
                sent += len(data)
        except OSError:
            pass
        try:
            client.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        client.close()
        upstream.close()
        if cut and self.on_cut:
            self.on_cut()

    def close(self):
        self.listener.close()


class WrongTotalServer:
    """An HTTP server for one object that answers its probe and a first GET
    truthfully, cuts that GET at `cut`, and answers the resume (Range:
    bytes=N-) of the same ETag with a Content-Range of another total."""

    def __init__(self, path, cut):
        import http.server
        with open(path, "rb") as f:
            body = f.read()
        server = self
        self.gets = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                wanted = self.headers.get("Range", "")
                start = int(wanted[6:].split("-")[0]) if wanted else 0
                if wanted == "bytes=0-0":
                    self._answer(206, body[:1], f"bytes 0-0/{len(body)}")
                    return
                server.gets += 1
                if start == 0:
                    self.send_response(200)
                    self._headers(len(body))
                    self.wfile.write(body[:cut])  # then the connection ends
                    self.close_connection = True
                    return
                total = len(body) + 1000  # the lie
                self._answer(206, body[start:],
                             f"bytes {start}-{len(body) - 1}/{total}")

            def _headers(self, length):
                self.send_header("ETag", '"one"')
                self.send_header("Content-Length", str(length))
                self.end_headers()

            def _answer(self, status, data, content_range):
                self.send_response(status)
                self.send_header("Content-Range", content_range)
                self._headers(len(data))
                self.wfile.write(data)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        daemon=True)
        self._thread.start()

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def close(self):
        self._server.shutdown()
        self._server.server_close()
