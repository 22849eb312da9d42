#!/usr/bin/env python3
"""Writes jobs/k8s/seccomp/render.json, the seccomp profile of the pods that
render (docs/src/cluster.md, "Rendering in the pods"), from Podman's default
profile (/usr/share/containers/seccomp.json, Debian's
golang-github-containers-common, which scripts/image.sh installs):

- as it applies to a container with no capabilities (the pods drop them
  all), on amd64 and arm64: rules that need a capability are left out, those
  that apply without one kept, their conditions taken away, and a system
  call both allowed and refused is refused;
- plus `chroot`, which Chromium's sandbox calls inside the user namespace it
  makes (where it holds CAP_SYS_CHROOT), and which Podman's default allows
  only to a container that holds the capability itself.

So the profile allows user namespaces (`clone` and `unshare` of a
namespace, as Podman's default does, and the Kubernetes runtimes'
RuntimeDefault does not) and nothing else that a container without
capabilities could not already do under Podman. Written flat, in the OCI
runtime's form (names, action, arguments; no capability or architecture
conditions), which both containerd and CRI-O read the same way.

    scripts/render-seccomp.py [SOURCE] > jobs/k8s/seccomp/render.json
"""
import json
import sys

ARCHES = {"amd64", "arm64"}
ADDED = "chroot"

source = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
base = json.load(open(source, encoding="utf-8"))

rules = []
for rule in base["syscalls"]:
    inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
    if inc.get("caps"):
        continue  # needs a capability the pods do not have
    if inc.get("arches") and not ARCHES & set(inc["arches"]):
        continue
    if exc.get("arches") and ARCHES <= set(exc["arches"]):
        continue
    names = [n for n in rule["names"] if n != ADDED]
    if not names:
        continue
    out = {"names": names, "action": rule["action"]}
    if rule.get("args"):
        out["args"] = rule["args"]
    if rule.get("errnoRet") is not None:
        out["errnoRet"] = rule["errnoRet"]
    rules.append(out)

# A name refused without condition is taken out of every unconditional allow.
refused = {n for r in rules if r["action"] != "SCMP_ACT_ALLOW" and "args" not in r for n in r["names"]}
for r in rules:
    if r["action"] == "SCMP_ACT_ALLOW" and "args" not in r:
        r["names"] = [n for n in r["names"] if n not in refused]
rules = [r for r in rules if r["names"]]
rules.append({"names": [ADDED], "action": "SCMP_ACT_ALLOW"})

profile = {
    "defaultAction": base["defaultAction"],
    "defaultErrnoRet": base.get("defaultErrnoRet", 1),
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"],
    "syscalls": rules,
}
json.dump(profile, sys.stdout, indent=1)
sys.stdout.write("\n")
