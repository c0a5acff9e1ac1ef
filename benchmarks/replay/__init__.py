"""A watch replay: record what a real API server sends the live model (discovery, each kind's
list, then its watch events), and serve it again, multiplied into distinct objects and at a
controlled rate, past what a kube-apiserver on this machine could produce (issue 33).

* recording.py: the file (gzip JSONL), the recorded sequence as steps that each change
  something, and the scale-up into K copies;
* record.py: the recorder, against a real API server;
* server.py: the replay server (`python -m benchmarks.replay.server --help`).
"""
