#!/usr/bin/env python3
"""pf_bytes.py - where the bytes of a .pftrace go, field by field.

    bench/export/pf_bytes.py TRACE.pftrace RECORDS

Walks the Trace (no protobuf library: varints and length-delimited fields)
and charges every byte of the file to one line: the packet frame (the
Trace.packet tag and length), each TracePacket field (tag and value), and
inside a TrackEvent its frame and each of its fields; packets are grouped
as BEGIN, END, INSTANT, COUNTER (TrackEvent types) or "other" (track
descriptors, clock snapshots, metadata).  Interned data is charged to the
packet that carries it.  Prints a markdown table of bytes per record
(RECORDS: the store's record count) and the total, which is the file size.
A deflated trace (the packets in TracePacket.compressed_packets, the
export's default) is inflated first: the table is then of the packets
inside (the total is their size) and a last line gives the file as written.
"""
import collections
import sys
import zlib

LEN, VARINT, FIXED64, FIXED32 = 2, 0, 1, 5


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field, wire type, value, bytes of tag + value) of a message."""
    i = 0
    while i < len(b):
        start = i
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == VARINT:
            v, i = varint(b, i)
        elif wt == LEN:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == FIXED64:
            v, i = b[i:i + 8], i + 8
        elif wt == FIXED32:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v, i - start


PACKET = {8: "timestamp", 10: "trusted_packet_sequence_id", 11: "track_event (frame)",
          12: "interned_data", 13: "sequence_flags", 59: "trace_packet_defaults",
          6: "clock_snapshot", 60: "track_descriptor", 5: "chrome_events (metadata)",
          58: "timestamp_clock_id"}
EVENT = {9: "type", 10: "name_iid", 23: "name (string)", 3: "category_iids",
         11: "track_uuid", 36: "flow_ids_old", 42: "terminating_flow_ids_old",
         4: "debug_annotations", 30: "counter_value"}
KIND = {1: "BEGIN", 2: "END", 3: "INSTANT", 4: "COUNTER"}


def inflate(data):
    """The packets, compressed_packets (field 50) inflated in place; and the
    number of compressed_packets."""
    out, chunks = bytearray(), 0
    for f, wt, pkt, n in fields(data):
        inner = next((v for ff, _, v, _ in fields(pkt) if ff == 50), None)
        if inner is None:
            out += bytes([0x0A]) + enc_varint(len(pkt)) + pkt
        else:
            out += zlib.decompress(inner)
            chunks += 1
    return bytes(out), chunks


def enc_varint(v):
    b = bytearray()
    while v >= 0x80:
        b.append(v & 0x7F | 0x80)
        v >>= 7
    b.append(v)
    return bytes(b)


def main():
    raw = open(sys.argv[1], "rb").read()
    records = int(sys.argv[2])
    data, chunks = inflate(raw)
    cost = collections.Counter()      # (packet class, line) -> bytes
    npk = collections.Counter()
    for f, wt, pkt, n in fields(data):
        pf = list(fields(pkt))
        te = next((v for ff, _, v, _ in pf if ff == 11), None)
        cls = "other"
        if te is not None:
            typ = next((v for ff, _, v, _ in fields(te) if ff == 9), 0)
            cls = KIND.get(typ, "other")
        npk[cls] += 1
        cost[(cls, "packet frame")] += n - len(pkt)
        for ff, _, v, m in pf:
            if ff == 11:
                cost[(cls, "track_event frame")] += m - len(v)
                for ef, _, _, em in fields(v):
                    cost[(cls, "  " + EVENT.get(ef, "field %d" % ef))] += em
            else:
                cost[(cls, PACKET.get(ff, "field %d" % ff))] += m
    total = sum(cost.values())
    assert total == len(data), (total, len(data))
    print("| packets | field | bytes | bytes/record | bytes/packet |")
    print("|---|---|---:|---:|---:|")
    for cls in ("BEGIN", "END", "INSTANT", "COUNTER", "other"):
        if not npk[cls]:
            continue
        lines = [(k[1], v) for k, v in cost.items() if k[0] == cls]
        sub = sum(v for _, v in lines)
        print("| %s (%d) | **all** | %d | **%.2f** | %.2f |"
              % (cls, npk[cls], sub, sub / records, sub / npk[cls]))
        for line, v in sorted(lines, key=lambda x: -x[1]):
            print("| | %s | %d | %.2f | %.2f |" % (line.strip() if not line.startswith("  ")
                                                  else "track_event." + line.strip(),
                                                  v, v / records, v / npk[cls]))
    print("| total | | %d | **%.2f** | |" % (total, total / records))
    if chunks:
        print("| file (deflated: %d compressed_packets, %.1fx) | | %d | **%.2f** | |"
              % (chunks, total / len(raw), len(raw), len(raw) / records))


if __name__ == "__main__":
    main()
