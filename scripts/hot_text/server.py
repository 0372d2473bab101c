"""A stand-in chat server for scripts/hot_text.sh: answers every chat completion after HOLD seconds
(argv[2]), so that the profiled `lllm run` also waits on the network, as it does against a real
server. Listens on 127.0.0.1:PORT (argv[1])."""
import http.server
import json
import sys
import time

HOLD = float(sys.argv[2])


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        time.sleep(HOLD)
        text = "stub answer to: " + body["messages"][-1]["content"]
        out = json.dumps({
            "id": "hot", "object": "chat.completion", "model": body.get("model", "stub"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
