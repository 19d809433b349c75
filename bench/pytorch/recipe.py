"""A recipe's model, data and optimizer keys, as emutrain reads them.

Reads the recipe YAML (PyYAML when installed, else the small block-YAML subset
the shipped recipes use), applies `--set key.path=value` like emutrain's
--set (the value parsed as YAML, `null` deletes the key), and fills the
defaults emutrain's schemas give to the keys the baselines need
(models/*.cpp EMU_MODEL registrations, train/recipe.cpp optimizer and data
keys). Why its own reader: the baselines must train the same model with the
same batch and optimizer as `emutrain bench train RECIPE --set ...`, without
asking the user to repeat the recipe's numbers.
"""
import copy
import os
import re

# models/<name>.cpp: the registered arguments and their defaults.
MODEL_DEFAULTS = {
    "resnet18": {"width": 64},
    "lenet5": {"activation": "relu", "pool": "max"},
    "crnn": {"embed_dim": 128, "conv_channels": 128, "conv_layers": 1, "kernel": 3, "rnn": "lstm",
             "hidden": 128, "layers": 1, "bidirectional": True, "attention": True, "attention_heads": 1,
             "dropout": 0.1},
    "gcn": {"hidden": 16, "dropout": 0.5, "input_dropout": 0.5, "bias": True},
    "transformer": {"num_blocks": 4, "head_size": 256, "num_heads": 4, "ff_dim": 4, "dropout": 0.25,
                    "mlp_units": [128], "mlp_dropout": 0.4, "eps": 1e-6, "pool": "features"},
}

# train/recipe.cpp sgd_keys() / adam_keys_with().
OPTIMIZER_DEFAULTS = {
    "sgd": {"lr": 0.01, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False,
            "clip_grad_norm": 0.0},
    "adam": {"lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0, "clip_grad_norm": 0.0},
    "adamw": {"lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01, "clip_grad_norm": 0.0},
}

# data/registry.cpp: the folder under the data root each dataset type reads by default.
DATA_SUBFOLDER = {"cifar10": "cifar10", "mnist": "mnist", "ucr": "ucr", "cora": "cora", "fra_eng": "fra-eng"}

# The model each dataset type's recipes train (for messages only).
MODEL_OF_RECIPE_DATA = {"cifar10": "resnet18", "mnist": "lenet5", "fra_eng": "crnn", "cora": "gcn", "ucr": "transformer"}


# --- a small YAML reader: block mappings, scalars, flow lists and maps -----------------

def _scalar(text):
    t = text.strip()
    if t == "" or t in ("null", "~", "Null", "NULL"):
        return None
    if t in ("true", "True", "TRUE"):
        return True
    if t in ("false", "False", "FALSE"):
        return False
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].strip()
        return [_scalar(p) for p in _split_flow(inner)] if inner else []
    if t.startswith("{") and t.endswith("}"):
        out = {}
        for part in _split_flow(t[1:-1].strip()):
            if part.strip():
                k, _, v = part.partition(":")
                out[k.strip()] = _scalar(v)
        return out
    if re.fullmatch(r"[-+]?\d+", t):
        return int(t)
    if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", t):
        return float(t)
    return t


def _split_flow(text):
    parts, depth, cur, quote = [], 0, "", None
    for ch in text:
        if quote:
            cur += ch
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote, cur = ch, cur + ch
        elif ch in "[{":
            depth, cur = depth + 1, cur + ch
        elif ch in "]}":
            depth, cur = depth - 1, cur + ch
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _strip_comment(line):
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def parse_yaml_subset(text):
    """Block mappings (indentation), `- ` lists of scalars or one-line maps, scalars."""
    lines = []
    for raw in text.splitlines():
        line = _strip_comment(raw).rstrip()
        if line.strip() and line.strip() != "---":
            lines.append((len(line) - len(line.lstrip(" ")), line.strip()))

    def block(i, indent):
        if i < len(lines) and lines[i][1].startswith("- "):
            items = []
            while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
                body = lines[i][1][2:].strip()
                if ":" in body and not body.startswith(("{", "[", "'", '"')):
                    k, _, v = body.partition(":")
                    item = {k.strip(): _scalar(v)}
                    i += 1
                    if i < len(lines) and lines[i][0] > indent:
                        more, i = block(i, lines[i][0])
                        item.update(more)
                    items.append(item)
                else:
                    items.append(_scalar(body))
                    i += 1
            return items, i
        out = {}
        while i < len(lines) and lines[i][0] == indent:
            key, _, rest = lines[i][1].partition(":")
            i += 1
            if rest.strip():
                out[key.strip()] = _scalar(rest)
            elif i < len(lines) and (lines[i][0] > indent or (lines[i][0] == indent and lines[i][1].startswith("- "))):
                out[key.strip()], i = block(i, lines[i][0])
            else:
                out[key.strip()] = None
        return out, i

    if not lines:
        return {}
    result, _ = block(0, lines[0][0])
    return result


def load_yaml_text(text):
    try:
        import yaml  # PyYAML, when installed
        return yaml.safe_load(text) or {}
    except ImportError:
        return parse_yaml_subset(text)


def parse_value(text):
    """A --set value, parsed as YAML like emutrain does."""
    try:
        import yaml
        return yaml.safe_load(text)
    except ImportError:
        return _scalar(text)


def apply_set(root, assignment):
    key, eq, value = assignment.partition("=")
    if not eq or not key:
        raise ValueError(f"--set '{assignment}': expected key.path=value")
    parts = key.split(".")
    node = root
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    v = parse_value(value)
    if v is None:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = v


def _number(v):
    return float(v) if isinstance(v, str) else v


class Recipe:
    """The keys the baselines read, with emutrain's defaults filled in."""

    def __init__(self, path, sets=()):
        with open(path, encoding="utf-8") as f:
            self.root = load_yaml_text(f.read())
        for s in sets:
            apply_set(self.root, s)
        self.path = path
        model = dict(self.root.get("model") or {})
        self.model_type = model.get("type")
        if self.model_type not in MODEL_DEFAULTS:
            raise ValueError(f"{path}: model.type '{self.model_type}' has no PyTorch baseline "
                             f"(have: {', '.join(sorted(MODEL_DEFAULTS))})")
        self.model = copy.deepcopy(MODEL_DEFAULTS[self.model_type])
        self.model.update({k: v for k, v in model.items() if k != "type"})
        self.data = dict(self.root.get("data") or {})
        opt = dict(self.root.get("optimizer") or {})
        self.optimizer_type = opt.get("type", "sgd")
        self.optimizer = dict(OPTIMIZER_DEFAULTS[self.optimizer_type])
        self.optimizer.update({k: _number(v) if k != "nesterov" else v for k, v in opt.items() if k != "type"})
        self.seed = int(self.root.get("seed") or 0)
        self.threads = int(self.root.get("threads") or 0)

    @property
    def batch_size(self):
        return int(self.data.get("batch_size", 32))

    @property
    def data_type(self):
        return self.data.get("type")

    def data_root(self, override=None):
        """data.root (with ${VAR} expanded) as emutrain reads it, else <override, else $EMUTRAIN_DATA_ROOT,
        else ./data>/<the dataset type's subfolder>."""
        if self.data.get("root"):
            return os.path.expandvars(str(self.data["root"]))
        base = override or os.environ.get("EMUTRAIN_DATA_ROOT") or "data"
        return os.path.join(base, DATA_SUBFOLDER.get(self.data_type, ""))
