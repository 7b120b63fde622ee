"""Workload specs for the trace replay (schema: /work/plan-issue16.md, "Workload spec").
A minimal loader until bench/datcpbench/workload.py (branch workload) is merged: it checks
what the replay uses and names the field of anything it refuses; `load_spec` has the
validator's name so the replay switches over by changing one import."""
from __future__ import annotations

import json
import re

NAME = re.compile(r"[A-Za-z0-9_.-]+$")
JOB_KEYS = {"name", "submit_s", "maps", "reduces", "partition_bytes", "map_seconds",
            "slow_maps", "deadline_s", "queue", "user", "map_hosts", "reduce_hosts",
            "reduce_bytes"}
TOP_KEYS = {"name", "jobs", "barrier", "hosts", "cluster"}


class SpecError(ValueError):
    pass


def _int(v, field, lo, hi=None):
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise SpecError(f"{field}: must be an integer {rng}")
    return v


def _num(v, field, lo, strict=False):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < lo or (strict and v == lo):
        raise SpecError(f"{field}: must be a number {'>' if strict else '>='} {lo}")
    return float(v)


def validate(spec):
    if not isinstance(spec, dict):
        raise SpecError("spec: must be a JSON object")
    for k in spec:
        if k not in TOP_KEYS:
            raise SpecError(f"{k}: unknown key; accepted: {', '.join(sorted(TOP_KEYS))}")
    if not isinstance(spec.get("name"), str) or not spec["name"]:
        raise SpecError("name: must be a non-empty string")
    jobs = spec.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise SpecError("jobs: must be a non-empty list")
    hosts = spec.get("hosts")
    if hosts is not None:
        _int(hosts, "hosts", 1)
    seen = set()
    for i, j in enumerate(jobs):
        p = f"jobs[{i}]"
        if not isinstance(j, dict):
            raise SpecError(f"{p}: must be an object")
        for k in j:
            if k not in JOB_KEYS:
                raise SpecError(f"{p}.{k}: unknown key; accepted: {', '.join(sorted(JOB_KEYS))}")
        for k in ("name", "submit_s", "maps", "reduces", "partition_bytes"):
            if k not in j:
                raise SpecError(f"{p}.{k}: missing")
        if not isinstance(j["name"], str) or not NAME.match(j["name"]):
            raise SpecError(f"{p}.name: must match [A-Za-z0-9_.-]+")
        if j["name"] in seen:
            raise SpecError(f"{p}.name: '{j['name']}' is not unique")
        seen.add(j["name"])
        _num(j["submit_s"], f"{p}.submit_s", 0)
        maps = _int(j["maps"], f"{p}.maps", 1)
        reduces = _int(j["reduces"], f"{p}.reduces", 1)
        _int(j["partition_bytes"], f"{p}.partition_bytes", 1)
        _num(j.get("map_seconds", 0), f"{p}.map_seconds", 0)
        _int(j.get("slow_maps", maps), f"{p}.slow_maps", 0, maps)
        if j.get("deadline_s") is not None:
            _num(j["deadline_s"], f"{p}.deadline_s", 0, strict=True)
        for k in ("queue", "user"):
            if k in j and not isinstance(j[k], str):
                raise SpecError(f"{p}.{k}: must be a string")
        for k, n in (("map_hosts", maps), ("reduce_hosts", reduces)):
            if k in j:
                if hosts is None:
                    raise SpecError(f"{p}.{k}: placement needs the top-level 'hosts'")
                v = j[k]
                if not isinstance(v, list) or len(v) != n:
                    raise SpecError(f"{p}.{k}: must be a list of {n} host indices")
                for x, h in enumerate(v):
                    _int(h, f"{p}.{k}[{x}]", 0, hosts - 1)
        if "reduce_bytes" in j:
            v = j["reduce_bytes"]
            if not isinstance(v, list) or len(v) != reduces:
                raise SpecError(f"{p}.reduce_bytes: must be a list of {reduces} integers >= 0")
            for x, b in enumerate(v):
                _int(b, f"{p}.reduce_bytes[{x}]", 0)
    return spec


def load_spec(path):
    try:
        with open(path) as fh:
            spec = json.load(fh)
    except ValueError as e:
        raise SpecError(f"{path}: not JSON: {e}") from e
    return validate(spec)
