"""repr(tensor) as PyTorch prints it: the same layout rules (4 decimals, an integer style
"1." when every value is whole, scientific notation when magnitudes span more than 1000x or
leave [1e-4, 1e8], columns padded to the widest value, rows wrapped at 80 characters,
summarised past 1000 elements with 3 items at each edge) and the same suffixes (device when not
the cpu, dtype when not float32/int64/bool, grad_fn=<...> or requires_grad=True, size= for an
empty tensor that is not 1-D). set_printoptions changes the options, as torch's does."""
import math

import numpy as np

from . import _C


class _Options:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _Options()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """PyTorch's set_printoptions: profile "default", "short" or "full", or single options."""
    if profile == "default":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, 1000
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    elif profile == "short":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 2, 1000
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 80
    elif profile == "full":
        PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, math.inf
        PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    for name, v in (("precision", precision), ("threshold", threshold),
                    ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if v is not None:
            setattr(PRINT_OPTS, name, v)
    PRINT_OPTS.sci_mode = sci_mode


class _Formatter:
    """One width and one style for every value printed (what torch's _Formatter decides)."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        p = PRINT_OPTS.precision
        if not floating:
            for v in values.reshape(-1).tolist():
                self.max_width = max(self.max_width, len(str(v)))
        else:
            flat = values.reshape(-1)
            nz = flat[np.isfinite(flat) & (flat != 0)]
            if nz.size:
                a = np.abs(nz)
                lo, hi = float(a.min()), float(a.max())
                self.int_mode = bool(np.all(nz == np.ceil(nz)))
                wide = hi / lo > 1000.0 or hi > 1.0e8
                if self.int_mode:
                    self.sci_mode = wide
                    fmt, extra = (f"{{:.{p}e}}", 0) if wide else ("{:.0f}", 1)
                else:
                    self.sci_mode = wide or lo < 1.0e-4
                    fmt, extra = (f"{{:.{p}e}}", 0) if self.sci_mode else (f"{{:.{p}f}}", 0)
                for v in nz.tolist():
                    self.max_width = max(self.max_width, len(fmt.format(v)) + extra)
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def format(self, v):
        p = PRINT_OPTS.precision
        if self.floating:
            if self.sci_mode:
                s = f"{{:{self.max_width}.{p}e}}".format(v)
            elif self.int_mode:
                s = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    s += "."
            else:
                s = f"{{:.{p}f}}".format(v)
        else:
            s = str(v)
        return (self.max_width - len(s)) * " " + s


def _summarized(a):
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:e], a[-e:])) if a.shape[0] > 2 * e else a
    rows = list(range(e)) + list(range(a.shape[0] - e, a.shape[0])) if a.shape[0] > 2 * e \
        else range(a.shape[0])
    return np.stack([_summarized(a[i]) for i in rows])


def _vector(a, indent, summarize, fmt):
    e = PRINT_OPTS.edgeitems
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2))))
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = ([fmt.format(v) for v in a[:e].tolist()] + [" ..."] +
                [fmt.format(v) for v in a[-e:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        rows = ([_nested(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."] +
                [_nested(a[i], indent + 1, summarize, fmt)
                 for i in range(a.shape[0] - e, a.shape[0])])
    else:
        rows = [_nested(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _host_values(t):
    """The values as a NumPy array: float64 for floating dtypes (exact for every one of them),
    int64 or bool otherwise."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype.is_floating_point:
        return t.to(_C.float64).numpy()
    return t.numpy()


def _with_suffixes(body, suffixes, indent):
    parts = [body]
    last = len(body) - body.rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            parts.append(", " + s)
            last += len(s) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t):
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default_dtype = t.dtype in (_C.float32, _C.int64, _C.bool)
    if t.numel() == 0:
        if t.ndim != 1:
            suffixes.append("size=" + str(tuple(t.shape)))
        if t.dtype != _C.float32:
            suffixes.append(f"dtype={t.dtype}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + str(tuple(t.shape)))
        if not default_dtype:
            suffixes.append(f"dtype={t.dtype}")
        a = _host_values(t)
        summarize = a.size > PRINT_OPTS.threshold
        fmt = _Formatter(_summarized(a) if summarize else a, t.dtype.is_floating_point)
        body = _nested(a, indent, summarize, fmt)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)
