"""Flips one bit in the payload of a file, where a checksum must catch it (issue 22 tests).

  damage.py zip FILE           the middle byte of FILE's largest zip record (a model or policy)
  damage.py h5 FILE DATASET    the middle byte of DATASET's first stored chunk
  damage.py manifest FILE KEY  the last digit of KEY's value in a checkpoint MANIFEST
  damage.py resum FILE         rewrites a MANIFEST's checksum after a deliberate edit (a test
                               that wants the edited field, not the checksum, to be refused)
"""
import struct
import sys
import zipfile


def zip_offset(path):
    with zipfile.ZipFile(path) as z:
        info = max(z.infolist(), key=lambda i: i.compress_size)
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        header = f.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_len + extra_len + info.compress_size // 2


def h5_offset(path, dataset):
    import h5py

    with h5py.File(path, "r") as f:
        chunk = f[dataset].id.get_chunk_info(0)
    return chunk.byte_offset + chunk.size // 2


def manifest_offset(path, key):
    data = open(path, "rb").read()
    start = data.index(b"\n" + key.encode() + b" ") + 1
    return data.index(b"\n", start) - 1


def fnv1a64(data):
    h = 1469598103934665603  # marlsched's kFnvOffset (core/serialize.hpp)
    for b in data:
        h = ((h ^ b) * 1099511628211) % (1 << 64)
    return h


def resum(path):
    lines = open(path, "rb").read().split(b"\n")
    body = b"".join(line + b"\n" for line in lines if line and not line.startswith((b"checksum", b"end")))
    with open(path, "wb") as f:
        f.write(body + b"checksum %016x\nend\n" % fnv1a64(body))
    print(f"re-summed {path}")


def main():
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "resum":
        resum(path)
        return
    if kind == "manifest":
        offset = manifest_offset(path, sys.argv[3])
    else:
        offset = zip_offset(path) if kind == "zip" else h5_offset(path, sys.argv[3])
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([b ^ (0x01 if kind == 'manifest' else 0x10)]))
    print(f"flipped a bit at byte {offset} of {path}")


if __name__ == "__main__":
    main()
