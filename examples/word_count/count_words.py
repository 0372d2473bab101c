"""Word counter for the word_count example: reads the tool's JSON arguments on stdin, prints the count."""
import json
import sys

args = json.load(sys.stdin)
text = args.get("text", "")
if not text.strip():
    print("no text given: pass a non-empty `text`", file=sys.stderr)
    sys.exit(1)
print(len(text.split()))
