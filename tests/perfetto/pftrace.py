#!/usr/bin/env python3
"""pftrace.py - read a Perfetto protobuf trace as trace processor would, for
the tests: packets, sequences (trusted_packet_sequence_id) with their
defaults, incremental clocks and interned data, track descriptors, and the
TrackEvents made into slices (BEGIN/END nested per track), instants,
counters and flows.  No protobuf library: varints and length-delimited
fields by hand, as the writer (src/export/export_pb.h) makes them.

    pftrace.py TRACE            print a JSON summary (the tests read it)
    pftrace.py --inflate TRACE  print the trace with every compressed_packets
                                packet replaced by the packets it holds

Packets deflated into TracePacket.compressed_packets (field 50: one zlib
stream each, under 512 KiB a packet, as Perfetto's service writes them with
COMPRESSION_TYPE_DEFLATE) are inflated and read in their place, as trace
processor's tokenizer does.

It fails (exit 1, a message) on anything trace processor would reject or
mis-read: a sequence-scoped clock or interned id used before it is defined,
an END with no open slice, a slice left open, a timestamp going backwards
on a sequence, a track used before its descriptor, bytes after the end.
"""
import json
import sys
import zlib

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5


class Bad(Exception):
    pass


def varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b):
            raise Bad("truncated varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i
        if shift > 63:
            raise Bad("varint too long")


def fields(b):
    """[(field, wiretype, value)]: ints for varint/fixed, bytes for LEN."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == VARINT:
            v, i = varint(b, i)
        elif wt == FIXED64:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == FIXED32:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        elif wt == LEN:
            n, i = varint(b, i)
            if i + n > len(b):
                raise Bad("field %d runs past its message" % f)
            v = b[i:i + n]
            i += n
        else:
            raise Bad("wire type %d" % wt)
        out.append((f, wt, v))
    if i != len(b):
        raise Bad("trailing bytes")
    return out


def first(fs, num, default=None):
    for f, _, v in fs:
        if f == num:
            return v
    return default


def every(fs, num):
    return [v for f, _, v in fs if f == num]


def s64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


class Seq:
    def __init__(self):
        self.clock_id = 0
        self.track = None
        self.clocks = {}      # seq-scoped clock id -> current value
        self.names, self.cats, self.das = {}, {}, {}
        self.last_ts = None
        self.valid = False


COMPRESSED_MAX = 512 * 1024   # trace_packet.proto: "should be less than 512KB"


def inflate(data):
    """The Trace with its compressed_packets packets inflated in place, and
    how many there were."""
    out, chunks = [], 0
    for f, wt, pkt in fields(data):
        if f != 1 or wt != LEN:
            raise Bad("Trace holds field %d" % f)
        p = fields(pkt)
        z = first(p, 50)
        if z is None:
            out.append(b"\x0a" + enc_varint(len(pkt)) + pkt)
            continue
        if len(p) != 1:
            raise Bad("compressed_packets beside other fields")
        if len(pkt) + 1 + len(enc_varint(len(pkt))) >= COMPRESSED_MAX:
            raise Bad("a compressed_packets packet of %d bytes" % len(pkt))
        d = zlib.decompressobj()
        inner = d.decompress(z)
        if not d.eof or d.unused_data:
            raise Bad("compressed_packets is not one whole zlib stream")
        for f2, wt2, _ in fields(inner):
            if f2 != 1 or wt2 != LEN:
                raise Bad("compressed_packets holds field %d" % f2)
        out.append(inner)
        chunks += 1
    return b"".join(out), chunks


def enc_varint(v):
    b = bytearray()
    while v >= 0x80:
        b.append(v & 0x7F | 0x80)
        v >>= 7
    b.append(v)
    return bytes(b)


def read(path):
    raw = open(path, "rb").read()
    data, chunks = inflate(raw)
    seqs, tracks = {}, {}
    stacks, slices, counters, flows_open, flows, flow_ev = {}, [], {}, {}, [], []
    meta, primary = {}, None
    npackets = 0
    for f, wt, pkt in fields(data):
        if f != 1 or wt != LEN:
            raise Bad("Trace holds field %d" % f)
        npackets += 1
        p = fields(pkt)
        sid = first(p, 10)
        if sid is None:
            raise Bad("packet %d has no trusted_packet_sequence_id" % npackets)
        sq = seqs.setdefault(sid, Seq())
        if first(p, 13, 0) & 1:
            sq.__init__()
            sq.valid = True
        d = first(p, 59)
        if d is not None:
            d = fields(d)
            sq.clock_id = first(d, 58, 0)
            ted = first(d, 11)
            sq.track = first(fields(ted), 11) if ted is not None else None
        idata = first(p, 12)
        if idata is not None:
            if not sq.valid:
                raise Bad("interned data before the sequence's state was cleared")
            for fi, _, v in fields(idata):
                e = fields(v)
                iid, name = first(e, 1), first(e, 2, b"").decode("utf-8")
                {1: sq.cats, 2: sq.names, 3: sq.das}.get(fi, {})[iid] = name
        cs = first(p, 6)
        if cs is not None:
            c = fields(cs)
            if first(c, 2) is not None:
                primary = first(c, 2)
            clocks = [fields(x) for x in every(c, 1)]
            for cl in clocks:
                cid, ts = first(cl, 1), first(cl, 2, 0)
                if cid >= 64:
                    if not first(cl, 3, 0):
                        raise Bad("clock %d is not incremental" % cid)
                    if not any(first(o, 1) == 1 for o in clocks):
                        raise Bad("clock %d is not tied to CLOCK_REALTIME" % cid)
                    sq.clocks[cid] = ts
            continue
        ts = first(p, 8)
        cid = first(p, 58) or sq.clock_id
        if ts is not None:
            if cid >= 64:
                if cid not in sq.clocks:
                    raise Bad("sequence %d uses clock %d before its snapshot" % (sid, cid))
                sq.clocks[cid] += ts
                ts = sq.clocks[cid]
            elif cid not in (0, 1):
                raise Bad("clock %d" % cid)
            if sq.last_ts is not None and ts < sq.last_ts and cid >= 64:
                raise Bad("time goes back on sequence %d" % sid)
            sq.last_ts = ts
        td = first(p, 60)
        if td is not None:
            t = fields(td)
            uuid = first(t, 1)
            rec = {"uuid": uuid, "parent": first(t, 5), "name": None, "pid": None,
                   "tid": None, "counter": first(t, 8) is not None, "type": "track"}
            if first(t, 2) is not None:
                rec["name"] = first(t, 2).decode("utf-8")
            pr = first(t, 3)
            if pr is not None:
                pr = fields(pr)
                rec.update(type="process", pid=s64(first(pr, 1, 0)),
                           name=first(pr, 6, b"").decode("utf-8"))
            th = first(t, 4)
            if th is not None:
                th = fields(th)
                rec.update(type="thread", pid=s64(first(th, 1, 0)), tid=s64(first(th, 2, 0)),
                           name=first(th, 5, b"").decode("utf-8"))
            if uuid in tracks:
                raise Bad("track %d described twice" % uuid)
            tracks[uuid] = rec
        ce = first(p, 5)
        if ce is not None:
            for m in every(fields(ce), 2):
                m = fields(m)
                name = first(m, 1).decode("utf-8")
                if first(m, 5) is not None:
                    meta[name] = json.loads(first(m, 5).decode("utf-8"))
                else:
                    meta[name] = (first(m, 2) or b"").decode("utf-8")
        te = first(p, 11)
        if te is None:
            continue
        if ts is None:
            raise Bad("a track event without a timestamp")
        e = fields(te)
        track = first(e, 11, sq.track)
        if track not in tracks:
            raise Bad("event on track %s before its descriptor" % track)
        typ = first(e, 9, 0)
        if typ == 4:
            counters.setdefault(track, []).append((ts, s64(first(e, 30, 0))))
            continue
        if typ == 2:
            st = stacks.get(track)
            if not st:
                raise Bad("END with no open slice on track %d" % track)
            sl = st.pop()
            sl["dur"] = ts - sl["ts"]
            continue
        if typ not in (1, 3):
            raise Bad("event type %d" % typ)
        name_iid = first(e, 10)
        if name_iid is not None:
            if name_iid not in sq.names:
                raise Bad("name iid %d not interned on sequence %d" % (name_iid, sid))
            name = sq.names[name_iid]
        else:
            name = (first(e, 23) or b"").decode("utf-8")
        cats = []
        for c in every(e, 3):
            if c not in sq.cats:
                raise Bad("category iid %d not interned on sequence %d" % (c, sid))
            cats.append(sq.cats[c])
        args = {}
        for a in every(e, 4):
            a = fields(a)
            ni = first(a, 1)
            if ni is not None and ni not in sq.das:
                raise Bad("annotation name iid %d not interned" % ni)
            an = sq.das[ni] if ni is not None else first(a, 10).decode("utf-8")
            for fi, key in ((2, bool), (3, int), (4, s64), (6, str)):
                v = first(a, fi)
                if v is not None:
                    args[an] = bool(v) if key is bool else v.decode("utf-8") if key is str \
                        else s64(v) if key is s64 else v
        st = stacks.setdefault(track, [])
        sl = {"track": track, "name": name, "cat": cats[0] if cats else None, "ts": ts,
              "dur": 0, "depth": len(st), "args": args, "seq": sid}
        slices.append(sl)
        idx = len(slices) - 1
        for fid in every(e, 36):
            flow_ev.append((ts, len(flow_ev), 36, fid, idx))
        for fid in every(e, 42):
            flow_ev.append((ts, len(flow_ev), 42, fid, idx))
        if typ == 1:
            st.append(sl)
    # flows as trace processor pairs them: in timestamp order over the whole
    # trace (not file order); an id started again while its flow is open
    # would join the two starts with a wrong arrow
    for ts, _, kind, fid, idx in sorted(flow_ev):
        if kind == 36:
            if fid in flows_open:
                raise Bad("flow id %d started at %d while open since slice %d"
                          % (fid, ts, flows_open[fid]))
            flows_open[fid] = idx
        elif fid in flows_open:
            flows.append((flows_open.pop(fid), idx))
    left = {t: len(s) for t, s in stacks.items() if s}
    if left:
        raise Bad("slices left open: %s" % left)
    return {"packets": npackets, "sequences": len(seqs), "primary_clock": primary,
            "tracks": tracks, "slices": slices, "counters": counters, "flows": flows,
            "metadata": meta, "bytes": len(raw), "inflated_bytes": len(data),
            "compressed_packets": chunks}


def track_path(tracks, uuid):
    names = []
    while uuid is not None and uuid in tracks:
        names.append(tracks[uuid]["name"])
        uuid = tracks[uuid]["parent"]
    return list(reversed(names))


def main():
    if sys.argv[1] == "--inflate":
        try:
            sys.stdout.buffer.write(inflate(open(sys.argv[2], "rb").read())[0])
        except (Bad, zlib.error) as e:
            print("pftrace.py: %s: %s" % (sys.argv[2], e), file=sys.stderr)
            return 1
        return 0
    try:
        t = read(sys.argv[1])
    except (Bad, UnicodeDecodeError, ValueError, zlib.error) as e:
        print("pftrace.py: %s: %s" % (sys.argv[1], e), file=sys.stderr)
        return 1
    for s in t["slices"]:
        tr = t["tracks"][s["track"]]
        s["path"] = track_path(t["tracks"], s["track"])
        s["pid"], s["tid"] = tr["pid"], tr["tid"]
    t["counters"] = {"/".join(track_path(t["tracks"], k)): v for k, v in t["counters"].items()}
    t["tracks"] = {str(k): v for k, v in t["tracks"].items()}
    json.dump(t, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
