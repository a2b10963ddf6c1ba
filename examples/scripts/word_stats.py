"""word_stats: a toolsmith script tool. Arguments arrive as JSON on stdin; one JSON value goes to stdout."""
import collections
import json
import re
import sys

args = json.load(sys.stdin)
text = args["text"]
words = re.findall(r"[\w']+", text.lower())
top = collections.Counter(words).most_common(args["top"])
print(json.dumps({
    "words": len(words),
    "lines": len(text.splitlines()),
    "characters": len(text),
    "top_words": [{"word": w, "count": c} for w, c in top],
}))
