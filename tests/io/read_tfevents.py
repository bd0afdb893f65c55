#!/usr/bin/python3
"""Decodes TensorBoard event files independently of marlsched's writer and checks them
against the run's metrics.csv:

    read_tfevents.py RUN_DIR

TFRecord framing (length, masked CRC32C of the length, data, masked CRC32C of the data) is
verified record by record; Event and Summary protobufs are parsed from the wire format.
"""
import csv
import glob
import math
import os
import struct
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def fields(buf):
    """(field number, wire type, value) of a protobuf message."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield num, wire, v


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i < len(data):
        header = data[i:i + 8]
        (n,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", data[i + 8:i + 12])
        if hcrc != masked(header):
            sys.exit(f"{path}: bad length CRC at byte {i}")
        body = data[i + 12:i + 12 + n]
        (dcrc,) = struct.unpack("<I", data[i + 12 + n:i + 16 + n])
        if dcrc != masked(body):
            sys.exit(f"{path}: bad data CRC at byte {i}")
        yield body
        i += 16 + n


def main(run_dir):
    assert crc32c(b"123456789") == 0xE3069283
    files = glob.glob(os.path.join(run_dir, "tb", "events.out.tfevents.*"))
    if len(files) != 1:
        sys.exit(f"expected one event file, found {files}")
    events = []
    for rec in records(files[0]):
        ev = {"scalars": {}}
        for num, wire, v in fields(rec):
            if num == 1:
                ev["wall_time"] = struct.unpack("<d", v)[0]
            elif num == 2:
                ev["step"] = v
            elif num == 3:
                ev["file_version"] = v.decode()
            elif num == 5:
                for _, _, value in fields(v):
                    tag = simple = None
                    for n2, _, v2 in fields(value):
                        if n2 == 1:
                            tag = v2.decode()
                        elif n2 == 2:
                            simple = struct.unpack("<f", v2)[0]
                    ev["scalars"][tag] = simple
        events.append(ev)
    if events[0].get("file_version") != "brain.Event:2":
        sys.exit("the first event is not the file version")
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        metrics = list(csv.DictReader(f))
    steps = [e for e in events[1:]]
    if len(steps) != len(metrics):
        sys.exit(f"{len(steps)} scalar events, {len(metrics)} metrics rows")
    for e, m in zip(steps, metrics):
        if e["step"] != int(m["agent_steps"]):
            sys.exit(f"step {e['step']} != agent_steps {m['agent_steps']}")
        for tag, col in [("reward/system_per_slot", "system_reward_per_slot"),
                         ("loss/policy", "policy_loss"), ("policy/entropy", "entropy")]:
            want = float(m[col])
            if not math.isclose(e["scalars"][tag], want, rel_tol=1e-6, abs_tol=1e-6):
                sys.exit(f"{tag} at step {e['step']}: {e['scalars'][tag]} vs metrics.csv {want}")
    print(f"ok: {os.path.basename(files[0])}: {len(events)} records, CRCs valid, "
          f"{len(steps[0]['scalars'])} scalars per step match metrics.csv")


if __name__ == "__main__":
    main(sys.argv[1])
