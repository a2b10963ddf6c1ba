"""An OTLP/HTTP trace receiver for the trace tests, decoding with the OpenTelemetry project's
own protobuf classes (PyPI `opentelemetry-proto`): POST /v1/traces appends one JSON line per
span to the file named on the command line; GET /echo answers with the `traceparent` header it
was sent (an `http` tool's service, for the propagation test). Prints its port, then serves on
127.0.0.1 until killed."""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)

OUT = sys.argv[1]


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, kind):
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/echo"):
            body = json.dumps({"traceparent": self.headers.get("traceparent")}).encode()
            self.answer(200, body, "application/json")
        else:
            self.answer(404, b"", "text/plain")

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
            self.answer(415, b"", "text/plain")
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(data)
        lines = []
        for rs in request.resource_spans:
            resource = {a.key: value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    lines.append(json.dumps({
                        "service": resource.get("service.name"),
                        "name": s.name,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "kind": s.kind,
                        "attributes": {a.key: value(a.value) for a in s.attributes},
                        "status": s.status.code,
                    }))
        with open(OUT, "a") as f:
            f.write("".join(line + "\n" for line in lines))
        self.answer(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
