#!/usr/bin/env bash
# Validates the Kubernetes manifests offline against the published schemas of
# one Kubernetes version, in strict mode (unknown fields are errors):
#   scripts/k8s-validate.sh                 every jobs/k8s/*.yaml object
#   scripts/k8s-validate.sh FILE...         those too, plus the given files
# A file may hold YAML documents (separated by ---), a JSON object, a JSON
# array of objects, a stream of JSON objects one after another, or a v1 List;
# each object is checked on its own. An object of a kind the schemas do not
# know is an error too (a misspelt kind or apiVersion would otherwise pass).
# Prints one line per object; exits 1 if any object is invalid, naming the
# file, the object, the field and the error.
# The validator and its schemas come from PyPI into a virtualenv, created
# once at ${LAYERCRAWL_K8S_VENV:-target/k8s-venv}; nothing is fetched while
# validating. LAYERCRAWL_K8S_VERSION picks another Kubernetes version.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${LAYERCRAWL_K8S_VENV:-$root/target/k8s-venv}"
# The validator's release fixes which schemas are there: 1.37.0 ships
# Kubernetes 1.x schemas up to 1.37.
validator_release="1.37.0"
k8s_version="${LAYERCRAWL_K8S_VERSION:-1.37.0}"

if ! "$venv/bin/python" -c "import kubernetes_validate.version as v, sys; sys.exit(v.__version__ != '$validator_release')" >/dev/null 2>&1; then
  echo "k8s-validate: installing the validator into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "kubernetes-validate==$validator_release" >&2
fi

files=()
for f in "$root"/jobs/k8s/*.yaml; do
  # kustomization.yaml configures kustomize; it is not a Kubernetes object.
  [ "$(basename "$f")" = kustomization.yaml ] && continue
  files+=("$f")
done
files+=("$@")

exec "$venv/bin/python" - "$k8s_version" "${files[@]}" <<'PY'
import json
import sys

import yaml
import kubernetes_validate.utils as kv

version, files = sys.argv[1], sys.argv[2:]


def json_objects(text):
    """Every JSON value in text: one value, or several one after another."""
    decoder, pos, out = json.JSONDecoder(), 0, []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return out
        value, pos = decoder.raw_decode(text, pos)
        out.append(value)


def objects(path):
    text = open(path, encoding="utf-8").read()
    if text.lstrip()[:1] in ("{", "["):
        values = json_objects(text)
    else:
        values = [d for d in yaml.safe_load_all(text) if d is not None]
    out = []

    def add(value):
        if isinstance(value, list):
            for v in value:
                add(v)
        elif isinstance(value, dict) and value.get("kind") == "List" and isinstance(value.get("items"), list):
            for v in value["items"]:
                add(v)
        else:
            out.append(value)

    for v in values:
        add(v)
    return out


def name(obj):
    if not isinstance(obj, dict):
        return "(not an object)"
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return "%s/%s" % (str(obj.get("kind", "?")).lower(), meta.get("name", meta.get("generateName", "?")))


failed = checked = 0
for path in files:
    try:
        objs = objects(path)
    except Exception as e:  # unreadable file, bad YAML or JSON
        print("ERROR %s: cannot read: %s" % (path, e))
        failed += 1
        continue
    if not objs:
        print("ERROR %s: no Kubernetes object in it" % path)
        failed += 1
        continue
    for obj in objs:
        checked += 1
        if not isinstance(obj, dict) or "apiVersion" not in obj or "kind" not in obj:
            print("ERROR %s: %s: not a Kubernetes object (needs apiVersion and kind)" % (path, name(obj)))
            failed += 1
            continue
        try:
            got = kv.validate(obj, version, strict=True)
            print("OK    %s: %s (%s) against Kubernetes %s, strict" % (path, name(obj), obj["apiVersion"], got))
        except kv.ValidationError as e:
            field = ".".join(str(p) for p in e.path) or "(top)"
            print("ERROR %s: %s: %s: %s" % (path, name(obj), field, e.message))
            failed += 1
        except kv.SchemaNotFoundError as e:
            print("ERROR %s: %s: %s" % (path, name(obj), e.message))
            failed += 1
        except kv.VersionNotSupportedError as e:
            print("FATAL %s (have %s)" % (e.message, ", ".join(kv.all_versions())))
            sys.exit(2)
        except Exception as e:
            print("ERROR %s: %s: %s" % (path, name(obj), e))
            failed += 1
print("%d objects checked, %d invalid" % (checked, failed))
sys.exit(1 if failed else 0)
PY
