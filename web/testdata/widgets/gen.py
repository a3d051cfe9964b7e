# Writes widgets.json: the comm_open messages and display bundles that
# ipywidgets 8 makes for an IntSlider, an Output, a Button and an HTML widget, as a kernel
# sends them (comm content and metadata), for the browser test that drives
# the notebook's widget layer through a scripted WebSocket
# (browser_widgets_test.go). Run with a Python that has ipywidgets 8:
#   python3 gen.py > widgets.json
import json
import uuid

import comm
from comm.base_comm import BaseComm

opens = []


class Recording(BaseComm):
    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        if msg_type != "comm_open":
            return
        opens.append({"content": {"comm_id": self.comm_id, "target_name": self.target_name, "data": data},
                      "metadata": metadata or {}})


comm.create_comm = lambda **kw: Recording(**kw)

import ipywidgets  # noqa: E402 (after the comm hook)

# Deterministic ids: the fixture does not change when regenerated.
n = [0]


def next_id():
    n[0] += 1
    return uuid.UUID(int=n[0]).hex


orig_init = BaseComm.__init__


def init(self, *a, **kw):
    kw.setdefault("comm_id", next_id())
    orig_init(self, *a, **kw)


BaseComm.__init__ = init

groups = {}
for name, make in (("slider", lambda: ipywidgets.IntSlider(value=5, min=0, max=10, description="n")),
                   ("output", lambda: ipywidgets.Output()),
                   ("button", lambda: ipywidgets.Button(description="Click me", icon="check")),
                   # Kernel markup the page must sanitise: no script, no handler, no style.
                   ("html", lambda: ipywidgets.HTML(
                       value='<b class="x">bold</b><img src="data:," onerror="window.pwned=1">'
                             '<script>window.pwned=2</script><span style="color:red">styled</span>'
                             '<a href="page.html">link</a><form action="/x"><input name="q"></form>',
                       description="<i>html</i> label", description_allow_html=True))):
    start = len(opens)
    w = make()
    bundle = w._repr_mimebundle_()
    groups[name] = {"model_id": w.model_id, "opens": opens[start:], "data": bundle}

print(json.dumps({"version": ipywidgets.__version__, "widgets": groups}, indent=1, sort_keys=True))
