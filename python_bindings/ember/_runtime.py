"""ember.doctor(): what this build and this machine offer."""
import json as _json

from . import _C


def doctor(as_dict=False):
    """The environment report `ember doctor` prints: a str, or a dict with as_dict=True."""
    if as_dict:
        return _json.loads(_C._env_report_json())
    return _Report(_C._env_report_text())


class _Report(str):
    def __repr__(self):
        return str(self)
