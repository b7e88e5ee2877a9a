"""An OTLP/HTTP receiver for Gatehouse's trace tests (http.server and opentelemetry-proto): decodes
the ExportTraceServiceRequest of every POST /v1/traces, protobuf or JSON, optionally gzipped, and
appends one JSON line per span to --out:

    {"trace_id": hex, "span_id": hex, "parent_span_id": hex or "", "name": ..., "kind": "SPAN_KIND_SERVER",
     "start_ns": ..., "end_ns": ..., "status_code": "STATUS_CODE_UNSET", "attributes": {...},
     "resource": {...}, "scope": instrumentation scope name}

A request's spans are appended with one write. POST /v1/metrics and /v1/logs are answered and
ignored. Prints "listening PORT" when it listens (--port 0 picks a free port); stops when its
standard input closes. With --count-only (benchmarks) nothing is written: the spans are decoded
and counted, and "received N spans" is printed at the end."""
import argparse
import base64
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from http_body import read_body

RESPONSES = {"/v1/traces": ExportTraceServiceResponse, "/v1/metrics": ExportMetricsServiceResponse,
             "/v1/logs": ExportLogsServiceResponse}
# OTLP/JSON writes these ids in hex, where protobuf's own JSON mapping expects base64.
HEX_ID_FIELDS = {"traceId", "spanId", "parentSpanId"}


def any_value(value):
    """An AnyValue as plain JSON: bytes become hex, arrays lists and key-value lists objects."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def attributes(key_values):
    return {item.key: any_value(item.value) for item in key_values}


def span_lines(request):
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield json.dumps({
                    "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(), "name": span.name,
                    "kind": Span.SpanKind.Name(span.kind), "start_ns": span.start_time_unix_nano,
                    "end_ns": span.end_time_unix_nano, "status_code": Status.StatusCode.Name(span.status.code),
                    "attributes": attributes(span.attributes), "resource": resource,
                    "scope": scope_spans.scope.name}) + "\n"


def hex_ids_to_base64(node):
    if isinstance(node, dict):
        return {key: base64.b64encode(bytes.fromhex(value)).decode()
                if key in HEX_ID_FIELDS and isinstance(value, str) else hex_ids_to_base64(value)
                for key, value in node.items()}
    if isinstance(node, list):
        return [hex_ids_to_base64(item) for item in node]
    return node


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--out", help="file the spans are appended to, one JSON line each")
    parser.add_argument("--count-only", action="store_true", help="decode and count the spans, write nothing")
    options = parser.parse_args()
    if not options.out and not options.count_only:
        parser.error("--out or --count-only is needed")
    out_lock = threading.Lock()
    received = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as exporters expect

        def reply(self, status, body=b"", content_type="text/plain"):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def read_body(self):
            body = read_body(self)
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
            return body

        def do_POST(self):
            try:
                body = self.read_body()
            except (ValueError, OSError, EOFError) as error:  # bad chunking or gzip
                self.close_connection = True
                return self.reply(400, f"cannot read the body: {error}".encode())
            response = RESPONSES.get(self.path.split("?")[0])
            if response is None:
                return self.reply(404, b"not found")
            content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if content_type not in ("application/x-protobuf", "application/json"):
                return self.reply(415, b"use application/x-protobuf or application/json")
            if response is ExportTraceServiceResponse:
                request = ExportTraceServiceRequest()
                try:
                    if content_type == "application/json":
                        json_format.ParseDict(hex_ids_to_base64(json.loads(body)), request,
                                              ignore_unknown_fields=True)
                    else:
                        request.ParseFromString(body)
                except (DecodeError, json_format.ParseError, ValueError) as error:
                    return self.reply(400, f"cannot decode the request: {error}".encode())
                if options.count_only:
                    count = sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)
                    with out_lock:
                        received[0] += count
                else:
                    lines = "".join(span_lines(request))
                    with out_lock, open(options.out, "a") as out:
                        out.write(lines)
            if content_type == "application/json":
                self.reply(200, b"{}", "application/json")
            else:
                self.reply(200, response().SerializeToString(), "application/x-protobuf")

        def log_message(self, *args):
            pass  # quiet: the spans file is the record

    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"listening {server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()
    if options.count_only:
        print(f"received {received[0]} spans", flush=True)


if __name__ == "__main__":
    main()
