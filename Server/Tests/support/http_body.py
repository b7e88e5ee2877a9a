"""The whole body of a request to one of the tests' HTTP stand-ins (http.server handlers):
chunked, as AsyncHTTPClient streams a body of unknown length, or by Content-Length."""


def read_body(handler):
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        body = b""
        while size := int(handler.rfile.readline().split(b";")[0], 16):
            body += handler.rfile.read(size)
            handler.rfile.readline()  # the CRLF after each chunk
        while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass  # trailers
        return body
    return handler.rfile.read(int(handler.headers.get("Content-Length", 0)))
