"""What the Python clients under tests/python-client print: one JSON object
per line, tagged "step", which the Rust tests read (support::processes::
next_step); an "error" step, and the process's end, on failure."""

import json
import os
import sys


def emit(**step):
    print(json.dumps(step), flush=True)


def fail(message, code):
    emit(step="error", message=message)
    sys.stdout.flush()
    os._exit(code)
