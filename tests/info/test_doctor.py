#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""syncbridge-info doctor (docs/inspect.md, "doctor").

    test_doctor.py SYNCBRIDGE_INFO CASE [MANIFEST_DIR]

Host tier:
  usage      --help exits 0 with the usage on stdout; bad arguments exit 2
             with nothing on stdout and one line on stderr
  json       --json loads; every finding is yes/no/unknown with a reason;
             each verdict has path, ordered, by, risk, advice; the text form
             exits 0 and ends with the verdicts
  hang       SYNCBRIDGE_DOCTOR_TEST_HANG=all (the test hook: each probe child
             sleeps) with --timeout-ms 500: doctor still exits 0, in seconds,
             and says which probe did not answer; control: without the hook
             nothing says so
  layer      the build tree's manifests (MANIFEST_DIR on XDG_DATA_DIRS): the
             layer is found, enabled, its library loads, and on the host's
             lavapipe (no SYNC_FD semaphores) it is pass-through; control:
             SYNCBRIDGE_DISABLE=1 reads "disabled" and "not loaded" (or,
             with a layer that reads the variable itself, "pass-through")
VM tier (root, vgem):
  plain      lavapipe: the kernel uapi all yes on udmabuf, vgem and
             virtio_gpu nodes listed; lavapipe measured: implicit out = no
             (its dma-buf has no pending fence while its VkFence is pending),
             implicit in = no (its read ends while a vgem fence on the buffer
             is pending); with the build tree's layer active, a submit with a
             FOREIGN release returns only once the work is done (the layer's
             SYNC_FD export blocks on lavapipe): vulkan-to-compositor ordered
             by the layer; a read after a FOREIGN acquire waits for the vgem
             fence: app-to-app-dmabuf ordered by the layer; control: SYNCBRIDGE_DISABLE=1 reads not ordered;
             EGL on llvmpipe: out = no (the control of the virgl case)
  virgl      the GPU guest: EGL on virgl, implicit out = yes (its dma-buf
             carries the pending virtio_gpu fence), egl-to-compositor ordered
  venus      the venus guest: the driver alone leaves no fence (out = no, the
             control) and with the layer active a FOREIGN release does (yes);
             the driver alone does not wait for a vgem fence on a dma-buf it
             reads (in = no, the control), with the layer's FOREIGN acquire
             it does (yes): both Vulkan paths ordered by the layer
Exit: 0 pass, 1 fail, 77 skip.
"""
import json
import os
import subprocess
import sys
import time

from common import SKIP, check, finish

TRI = ("yes", "no", "unknown")


def run(tool, args, env=None, timeout=600):
    t0 = time.monotonic()
    r = subprocess.run([tool] + args, capture_output=True, text=True, env=env, timeout=timeout)
    return r.returncode, r.stdout, r.stderr, time.monotonic() - t0


def doctor_json(tool, env=None, timeout_ms=None):
    args = ["doctor", "--json"] + (["--timeout-ms", str(timeout_ms)] if timeout_ms else [])
    rc, out, err, secs = run(tool, args, env=env)
    check(rc == 0, f"doctor --json exits 0 (got {rc}; {err.strip()[-200:]})")
    try:
        doc = json.loads(out)
    except ValueError as e:
        check(False, f"doctor --json loads ({e})")
        sys.exit(finish())
    print(f"# doctor ran {secs:.1f} s")
    return doc


def items(o, path=""):
    """Every finding ({"value", "why"}) in the document, with its path."""
    if isinstance(o, dict):
        if set(o) == {"value", "why"}:
            yield path, o
            return
        for k, v in o.items():
            yield from items(v, f"{path}.{k}")
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from items(v, f"{path}[{i}]")


def verdict(doc, path, subject=None):
    for v in doc["verdicts"]:
        if v["path"] == path and (subject is None or subject in (v["subject"] or "")):
            return v
    return None


def device(doc, word):
    for d in doc["vulkan"]["devices"]:
        if word in d["name"].lower() or word in (d["driver"] or "").lower():
            return d
    return None


def show(d, keys):
    for k in keys:
        print(f"# {d['name']}: {k} = {json.dumps(d[k])}")


def case_usage(tool, _):
    rc, out, err, _ = run(tool, ["doctor", "--help"])
    check(rc == 0 and out.startswith("usage: syncbridge-info doctor"), f"--help: exit 0, usage ({rc})")
    for args in (["--bogus"], ["--timeout-ms"], ["--timeout-ms", "0"], ["--timeout-ms", "x"],
                 ["extra"]):
        rc, out, err, _ = run(tool, ["doctor"] + args)
        check(rc == 2 and out == "" and err.startswith("syncbridge-info: doctor: ") and
              err.count("\n") == 1,
              f"doctor {' '.join(args)}: exit 2, stdout empty ({rc}, {err.strip()[:60]})")


def case_json(tool, _):
    doc = doctor_json(tool)
    for key in ("kernel", "vulkan", "egl", "layer", "wayland", "pipewire", "verdicts"):
        check(key in doc, f"key {key}")
    bad = [p for p, it in items(doc) if it["value"] not in TRI or not it["why"]]
    check(not bad, f"every finding is yes/no/unknown with a reason ({bad[:3]})")
    vs = doc["verdicts"]
    check(len(vs) >= 1 and all(set(v) >= {"path", "ordered", "by", "risk", "advice"} and
                               v["ordered"] in TRI and v["by"] for v in vs),
          f"{len(vs)} verdicts, each complete")
    check(verdict(doc, "pipewire-camera-screencast") is not None, "the PipeWire path has a verdict")
    rc, out, err, _ = run(tool, ["doctor"])
    check(rc == 0 and "Verdicts:" in out and out.startswith("Kernel: "), f"text form ({rc})")


def case_hang(tool, _):
    env = dict(os.environ, SYNCBRIDGE_DOCTOR_TEST_HANG="all")
    rc, out, err, secs = run(tool, ["doctor", "--json", "--timeout-ms", "500"], env=env, timeout=60)
    doc = json.loads(out) if rc == 0 else {}
    check(rc == 0 and secs < 20, f"hung probes: exit 0 in {secs:.1f} s ({rc})")
    why = doc.get("vulkan", {}).get("available", {}).get("why", "")
    check("did not answer in 500 ms" in why, f"the Vulkan probe is cut off: {why}")
    if doc.get("egl"):
        why = doc["egl"]["available"]["why"]
        check("did not answer in 500 ms" in why, f"the EGL probe is cut off: {why}")
    doc = doctor_json(tool)
    check("did not answer" not in json.dumps(doc), "control: without the hook every probe answers")


def layer_env(manifest_dir, **extra):
    env = dict(os.environ, XDG_DATA_DIRS=f"{manifest_dir}:/usr/local/share:/usr/share")
    for k in ("SYNCBRIDGE_DISABLE", "VK_LOADER_LAYERS_DISABLE", "VK_INSTANCE_LAYERS"):
        env.pop(k, None)
    env.update(extra)
    return env


def case_layer(tool, manifest_dir):
    doc = doctor_json(tool, env=layer_env(manifest_dir))
    lay = doc["layer"]
    check(lay["installed"]["value"] == "yes", f"installed: {lay['installed']['why']}")
    check(lay["enabled"]["value"] == "yes", f"enabled: {lay['enabled']['why']}")
    check(any(m["kind"] == "implicit" and m["loads"]["value"] == "yes" for m in lay["manifests"]),
          "the implicit manifest's library loads")
    d = device(doc, "llvmpipe")
    if d is None:
        print("# no lavapipe on this host")
        sys.exit(SKIP)
    show(d, ["sync_fd_semaphore_export", "layer"])
    if d["sync_fd_semaphore_export"]["value"] == "no":
        check(d["layer"]["state"] == "pass-through", f"lavapipe without SYNC_FD: pass-through "
              f"({d['layer']['state']}: {d['layer']['why']})")
    doc = doctor_json(tool, env=layer_env(manifest_dir, SYNCBRIDGE_DISABLE="1"))
    check(doc["layer"]["enabled"]["value"] == "no" and "SYNCBRIDGE_DISABLE" in
          doc["layer"]["enabled"]["why"], f"control: {doc['layer']['enabled']['why']}")
    d = device(doc, "llvmpipe")
    check(d["layer"]["state"] in ("not loaded", "pass-through"),
          f"control: the layer not loaded or pass-through ({d['layer']['state']})")


def case_plain(tool, manifest_dir):
    doc = doctor_json(tool, env=layer_env(manifest_dir), timeout_ms=240000)
    k = doc["kernel"]
    for key in ("dmabuf_export_sync_file", "dmabuf_import_sync_file", "sync_file_set_deadline"):
        check(k[key]["value"] == "yes", f"kernel {key}: {k[key]['why']}")
    drivers = {n["driver"] for n in k["drm_nodes"]}
    check({"vgem", "virtio_gpu"} <= drivers, f"DRM nodes: {sorted(d for d in drivers if d)}")
    d = device(doc, "llvmpipe")
    if not check(d is not None, "lavapipe listed"):
        return
    show(d, ["implicit_out", "implicit_in", "layer"])
    check(d["implicit_out"]["value"] == "no", f"lavapipe out: {d['implicit_out']['why']}")
    check(d["implicit_in"]["value"] == "no", f"lavapipe in: {d['implicit_in']['why']}")
    egl = doc["egl"]
    print(f"# egl: {json.dumps(egl)}")
    if egl and "llvmpipe" in (egl["renderer"] or ""):
        check(egl["implicit_out"]["value"] == "no",
              f"control for virgl: EGL on llvmpipe leaves no fence ({egl['implicit_out']['why']})")
    v = verdict(doc, "vulkan-to-compositor", d["name"])
    lay = d["layer"]
    check(lay["state"] == "active", f"the build tree's layer active on lavapipe ({lay['why']})")
    fo = lay["foreign_release_out"]
    check(fo["value"] == "yes" and "CPU wait" in fo["why"],
          f"with the layer, lavapipe's submit with a FOREIGN release returns only when done ({fo['why']})")
    check(v and v["ordered"] == "yes" and "syncbridge layer" in v["by"], f"verdict vulkan-to-compositor: {v}")
    fi = lay["foreign_acquire_in"]
    check(fi["value"] == "yes", f"with the layer, a read after a FOREIGN acquire waits ({fi['why']})")
    v = verdict(doc, "app-to-app-dmabuf", d["name"])
    check(v and v["ordered"] == "yes" and "syncbridge layer" in v["by"], f"verdict app-to-app-dmabuf: {v}")
    doc = doctor_json(tool, env=layer_env(manifest_dir, SYNCBRIDGE_DISABLE="1"), timeout_ms=240000)
    d = device(doc, "llvmpipe")
    v = verdict(doc, "vulkan-to-compositor", d["name"])
    check(d["layer"]["state"] in ("not loaded", "pass-through") and v and v["ordered"] == "no",
          f"control, SYNCBRIDGE_DISABLE=1: layer {d['layer']['state']}, ordered {v and v['ordered']}")
    v = verdict(doc, "app-to-app-dmabuf", d["name"])
    check(v and v["ordered"] == "no", f"control: app-to-app-dmabuf not ordered ({v and v['by']})")


def case_virgl(tool, manifest_dir):
    doc = doctor_json(tool, env=layer_env(manifest_dir), timeout_ms=120000)
    egl = doc["egl"]
    print(f"# egl: {json.dumps(egl)}")
    if not egl or "virgl" not in (egl["renderer"] or "").lower():
        check(False, f"EGL on virgl (renderer {egl and egl['renderer']})")
        return
    check(egl["native_fence_sync"]["value"] == "yes", "virgl: EGL_ANDROID_native_fence_sync")
    check(egl["implicit_out"]["value"] == "yes", f"virgl EGL out: {egl['implicit_out']['why']}")
    v = verdict(doc, "egl-to-compositor")
    check(v and v["ordered"] == "yes", f"verdict egl-to-compositor: {v}")


def case_venus(tool, manifest_dir):
    # Only venus's ICD and no EGL vendor: lavapipe's and EGL's probes under TCG in
    # TCG would take minutes and are measured in the other guests.
    env = layer_env(manifest_dir, VK_ICD_FILENAMES="/usr/share/vulkan/icd.d/virtio_icd.json",
                    __EGL_VENDOR_LIBRARY_FILENAMES="/nonexistent.json")
    doc = doctor_json(tool, env=env, timeout_ms=300000)
    d = device(doc, "venus")
    if not check(d is not None, "venus listed"):
        return
    show(d, ["implicit_out", "implicit_in", "layer"])
    check(d["implicit_out"]["value"] == "no", f"control, the driver alone: no fence "
          f"({d['implicit_out']['why']})")
    check(d["layer"]["state"] == "active", f"layer active on venus ({d['layer']['why']})")
    fo = d["layer"]["foreign_release_out"]
    check(fo["value"] == "yes", f"with the layer, a FOREIGN release leaves a fence ({fo['why']})")
    v = verdict(doc, "vulkan-to-compositor", d["name"])
    check(v and v["ordered"] == "yes" and "syncbridge layer" in v["by"], f"verdict: {v}")
    check(d["implicit_in"]["value"] == "no", f"control, the driver alone does not wait for a "
          f"fence on a dma-buf it reads ({d['implicit_in']['why']})")
    fi = d["layer"]["foreign_acquire_in"]
    check(fi["value"] == "yes", f"with the layer, a read after a FOREIGN acquire waits ({fi['why']})")
    v = verdict(doc, "app-to-app-dmabuf", d["name"])
    check(v and v["ordered"] == "yes" and "syncbridge layer" in v["by"], f"verdict app-to-app: {v}")


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    cases = {"usage": case_usage, "json": case_json, "hang": case_hang, "layer": case_layer,
             "plain": case_plain, "virgl": case_virgl, "venus": case_venus}
    if argv[2] not in cases:
        print(f"unknown case {argv[2]}")
        return 2
    cases[argv[2]](argv[1], argv[3] if len(argv) > 3 else None)
    return finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
