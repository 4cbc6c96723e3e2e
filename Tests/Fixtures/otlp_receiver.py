"""A small OTLP/HTTP trace receiver for the trace tests: decodes each POST /v1/traces body as an
ExportTraceServiceRequest (protobuf, or JSON) with PyPI's opentelemetry-proto and appends every
span to a file, one JSON object a line. Listens on 127.0.0.1 at a free port, which it writes to
the port file once it is listening.

    python3 otlp_receiver.py <port file> <spans file>
"""

import gzip
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

port_file, spans_file = sys.argv[1], sys.argv[2]


def value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind is None:
        return None
    return getattr(any_value, kind)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = trace_service_pb2.ExportTraceServiceRequest()
        try:
            if "json" in self.headers.get("Content-Type", ""):
                json_format.Parse(body, request)
            else:
                request.ParseFromString(body)
        except Exception as error:  # a body that is not OTLP: the test sees it
            with open(spans_file, "a") as out:
                out.write(json.dumps({"undecodable": str(error), "path": self.path}) + "\n")
            self.send_response(400)
            self.end_headers()
            return
        lines = []
        for resource_spans in request.resource_spans:
            resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    lines.append(
                        json.dumps(
                            {
                                "path": self.path,
                                "resource": resource,
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent_span_id": span.parent_span_id.hex(),
                                "name": span.name,
                                "kind": span.kind,
                                "start": span.start_time_unix_nano,
                                "end": span.end_time_unix_nano,
                                "status": {"code": span.status.code, "message": span.status.message},
                                "attributes": {a.key: value(a.value) for a in span.attributes},
                            }
                        )
                    )
        with open(spans_file, "a") as out:
            out.write("".join(line + "\n" for line in lines))
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def watch_parent(parent):
    """Ends the receiver when the test process that started it is gone."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


threading.Thread(target=watch_parent, args=(os.getppid(),), daemon=True).start()
server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
with open(port_file + ".tmp", "w") as out:
    out.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
