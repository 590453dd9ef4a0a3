#!/usr/bin/env bash
# The OpenMP example examples/omp/mandel.c: bad arguments (usage, status 2);
# the PNG and the summary it writes, whose checksum does not depend on the
# schedule (chunk, threads); and --serve: the server answers, /progress
# reaches every row, /image.png is complete and shows
# the hue of every node that computed rows, a headless Chromium loads the
# page after the end (its progress bar at 100, the final picture drawn, the
# screenshot's picture complete and in the nodes' hues), POST /quit ends it.
# Builds nothing:
#   MANDEL      the binary (default $ROOT/$BUILD/examples/omp/mandel)
#   MANDEL_RUN  the launcher before it, split at spaces (default: two
#               emulated nodes of one thread, "knitrun -n 2 --nodes 2 -x
#               OMP_NUM_THREADS=1"; "" runs it alone)
#   CHROMIUM    the browser (default chromium or chromium-browser from PATH;
#               without one the browser's checks are skipped)
source "$(dirname "$0")/../job/lib.sh"

MANDEL=${MANDEL:-$ROOT/$BUILD/examples/omp/mandel}
read -r -a LAUNCH <<<"${MANDEL_RUN-$KNITRUN -n 2 --nodes 2 -x OMP_NUM_THREADS=1}"
[ -x "$MANDEL" ] || { echo "FAIL mandel.build: $MANDEL is missing"; exit 1; }
command -v python3 >/dev/null || { echo "SKIP mandel: no python3"; exit 0; }

SERVER=""
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

# The checks' helper: HTTP with urllib, PNG decoded with zlib (no PIL).
cat >"$TMP/check.py" <<'EOF'
import colorsys, json, sys, urllib.request, zlib

def get(url, data=None):
    with urllib.request.urlopen(url, data=data, timeout=10) as r:
        return r.read()

def png(path):
    """(width, height, channels, rows of bytes) of an 8-bit PNG without interlace."""
    b = open(path, 'rb').read()
    if b[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError('not a PNG')
    pos, idat, ihdr = 8, [], None
    while pos < len(b):
        n = int.from_bytes(b[pos:pos + 4], 'big')
        kind, body = b[pos + 4:pos + 8], b[pos + 8:pos + 8 + n]
        if len(body) != n or zlib.crc32(kind + body) != int.from_bytes(b[pos + 8 + n:pos + 12 + n], 'big'):
            raise ValueError('chunk %r: truncated or bad crc' % kind)
        pos += 12 + n
        if kind == b'IHDR':
            ihdr = body
        elif kind == b'IDAT':
            idat.append(body)
        elif kind == b'IEND':
            break
    else:
        raise ValueError('no IEND')
    w, h = int.from_bytes(ihdr[0:4], 'big'), int.from_bytes(ihdr[4:8], 'big')
    depth, ctype, interlace = ihdr[8], ihdr[9], ihdr[12]
    ch = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or ch is None or interlace:
        raise ValueError('depth %d, color type %d, interlace %d: not handled' % (depth, ctype, interlace))
    raw = zlib.decompress(b''.join(idat))
    stride = w * ch
    if len(raw) != h * (stride + 1):
        raise ValueError('%d bytes of pixels, %d expected' % (len(raw), h * (stride + 1)))
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(ch, stride):
                line[i] = (line[i] + line[i - ch]) & 255
        elif f == 2:
            line = bytearray((a + c) & 255 for a, c in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - ch] if i >= ch else 0) + prev[i]) // 2) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - ch] if i >= ch else 0
                c = prev[i - ch] if i >= ch else 0
                u = prev[i]
                p = a + u - c
                pa, pb, pc = abs(p - a), abs(p - u), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else u if pb <= pc else c)) & 255
        elif f != 0:
            raise ValueError('row %d: filter %d' % (y, f))
        rows.append(bytes(line))
        prev = line
    return w, h, ch, rows

def pixels(rows, ch, x0, y0, w, h):
    """Each row of the area: a list of (r, g, b, a)."""
    out = []
    for y in range(y0, y0 + h):
        r = rows[y]
        if ch >= 3:
            out.append([tuple(r[i:i + 3]) + ((r[i + 3],) if ch == 4 else (255,))
                        for i in range(x0 * ch, (x0 + w) * ch, ch)])
        else:
            out.append([(r[i],) * 3 + ((r[i + 1],) if ch == 2 else (255,))
                        for i in range(x0 * ch, (x0 + w) * ch, ch)])
    return out

def node_hue(k):  # as mandel.c's node_hue()
    return (200.0 + 137.508 * k) % 360.0

def picture(area, per_node):
    """What is wrong with a complete picture of these nodes' rows, or ''."""
    total = sum(per_node)
    colors, hues, blank = set(), [0] * len(per_node), 0
    for line in area:
        lit = 0
        for r, g, b, a in line:
            colors.add((r, g, b, a))
            if a < 255:
                continue
            h, s, v = colorsys.rgb_to_hsv(r / 255, g / 255, b / 255)
            if v > 0.05:
                lit += 1
            if s < 0.3 or v < 0.15:
                continue
            for k in range(len(per_node)):
                if abs((h * 360 - node_hue(k) + 180) % 360 - 180) < 12:
                    hues[k] += 1
        if lit == 0:
            blank += 1
    npix = sum(len(l) for l in area)
    why = []
    if blank:
        why.append('%d of %d rows dark or transparent' % (blank, len(area)))
    if len(colors) < 100:
        why.append('only %d colors' % len(colors))
    # every node that computed 1% of the rows shows in its hue; on several
    # nodes, at least two did
    want = [k for k, n in enumerate(per_node) if n * 100 >= total]
    if len(per_node) >= 2 and len(want) < 2:
        why.append('rows per node %s: one node computed nearly all' % per_node)
    for k in want:
        if hues[k] * total < npix * per_node[k] // 4:
            why.append('node %d: %d pixels of its hue for %d of %d rows' % (k, hues[k], per_node[k], total))
    return '; '.join(why), len(colors), hues

cmd = sys.argv[1]
try:
    if cmd == 'get':  # URL: the body on stdout
        sys.stdout.buffer.write(get(sys.argv[2]))
    elif cmd == 'post':
        sys.stdout.buffer.write(get(sys.argv[2], data=b''))
    elif cmd == 'progress':  # URL W H: "rows_done rows done n0,n1,.." if the server is ours
        p = json.loads(get(sys.argv[2]))
        if (p['width'], p['height']) != (int(sys.argv[3]), int(sys.argv[4])):
            sys.exit('another server: %r' % p)
        print(p['rows_done'], p['rows'], int(p['done']), ','.join(map(str, p['rows_per_node'])))
    elif cmd == 'png':  # FILE W H: a valid RGB(A) PNG of that size, many colors
        w, h, ch, rows = png(sys.argv[2])
        if (w, h) != (int(sys.argv[3]), int(sys.argv[4])) or ch < 3:
            sys.exit('%dx%d with %d channels' % (w, h, ch))
        n = len(set(rows[y][i:i + ch] for y in range(0, h, 3) for i in range(0, w * ch, 3 * ch)))
        if n < 100:
            sys.exit('only %d colors' % n)
        print('ok %d colors' % n)
    elif cmd == 'picture':  # FILE X Y W H n0,n1,..: that area is the nodes' picture
        w, h, ch, rows = png(sys.argv[2])
        x, y, aw, ah = map(int, sys.argv[3:7])
        if x + aw > w or y + ah > h:
            sys.exit('the image is %dx%d, smaller than the area' % (w, h))
        why, ncolors, hues = picture(pixels(rows, ch, x, y, aw, ah), [int(n) for n in sys.argv[7].split(',')])
        if why:
            sys.exit(why)
        print('ok %d colors, pixels per node hue %s' % (ncolors, hues))
    else:
        sys.exit('unknown command ' + cmd)
except (OSError, ValueError, KeyError, zlib.error) as e:
    sys.exit('%s: %s' % (cmd, e))
EOF
check() { python3 "$TMP/check.py" "$@"; }
summary() { sed -n "s/^$1 //p" "$OUT" | head -n 1; }

# bad arguments: usage, status 2
for c in "size:-s 0x5" "iterations:-i x" "port:--serve 70000" "option:--bogus" "operand:extra"; do
    # shellcheck disable=SC2086
    run "${LAUNCH[@]}" "$MANDEL" ${c#*:}
    if [ "$RC" -eq 2 ] && grep -q '^usage: mandel' "$ERR"; then
        pass "mandel.usage.${c%%:*}"
    else
        fail "mandel.usage.${c%%:*}" "status $RC: $(head -n 2 "$ERR" | tr '\n' '|')"
    fi
done

# the PNG and the summary
run "${LAUNCH[@]}" "$MANDEL" -s 640x480 -i 500 -o "$TMP/a.png"
sum_a=$(summary checksum) total_a=$(summary 'total iterations')
per=$(summary 'rows per node:')
if [ "$RC" -eq 0 ] && [ "$(summary size)" = 640x480 ] && [ "$(summary 'max iterations')" = 500 ] &&
    [[ $sum_a =~ ^[0-9a-f]{8}$ ]] && [ "$(($(tr ' ' '+' <<<"$per")))" = 480 ] &&
    grep -qE '^time [0-9.]+ s$' "$OUT" && grep -q "^wrote $TMP/a.png$" "$OUT"; then
    pass mandel.summary
else
    fail mandel.summary "status $RC, stdout '$(tr '\n' '|' <"$OUT")', stderr '$(tail -n 3 "$ERR" | tr '\n' '|')'"
fi
if why=$(check png "$TMP/a.png" 640 480 2>&1); then
    pass mandel.png
else
    fail mandel.png "$why"
fi
# the same counts whatever the schedule: chunks of 7 rows, one thread
OMP_NUM_THREADS=1 run "${LAUNCH[@]}" "$MANDEL" -s 640x480 -i 500 -c 7 -o "$TMP/b.png"
if [ "$RC" -eq 0 ] && [ -n "$sum_a" ] && [ "$(summary checksum)" = "$sum_a" ] &&
    [ "$(summary 'total iterations')" = "$total_a" ] && cmp -s "$TMP/a.png" "$TMP/b.png"; then
    pass mandel.checksum
else
    fail mandel.checksum "status $RC, checksum '$(summary checksum)' after '$sum_a'"
fi

# --serve: a port of our own (20000 + pid, the next ones when taken)
W=1024 H=1024
port=$((20000 + $$ % 1000))
for ((try = 0; try < 10; try++)); do
    [ $try -gt 0 ] && port=$((port + 1))
    timeout -k 2 180 "${LAUNCH[@]}" "$MANDEL" --serve "$port" --linger 60 -q -s ${W}x$H -i 3000 \
        >"$TMP/serve.out" 2>"$TMP/serve.err" &
    SERVER=$!
    answered=""
    for ((i = 0; i < 300; i++)); do
        if ! kill -0 "$SERVER" 2>/dev/null; then
            break
        elif check progress "http://127.0.0.1:$port/progress" $W $H >"$TMP/progress" 2>/dev/null; then
            answered=1
            break
        fi
        sleep 0.1
    done
    [ -n "$answered" ] && break
    wait "$SERVER"
    rc=$?
    SERVER=""
    grep -q 'cannot serve on port' "$TMP/serve.err" || break
done
if [ -z "$answered" ]; then
    fail mandel.web.server "no answer on port $port (status $rc): $(tail -n 3 "$TMP/serve.err" | tr '\n' '|')"
    finish
fi
pass mandel.web.server
URL=http://127.0.0.1:$port

# until the picture is done (each poll is a request to the computing master)
finished=0 done_rows="" rows="" per_node=""
for ((i = 0; i < 1200; i++)); do
    if ! check progress "$URL/progress" $W $H >"$TMP/progress" 2>&1; then
        kill -0 "$SERVER" 2>/dev/null || break
        sleep 0.1
        continue
    fi
    read -r done_rows rows finished per_node <"$TMP/progress"
    [ "$finished" = 1 ] && break
    sleep 0.1
done
if [ "$finished" = 1 ] && [ "$done_rows" = $H ] && [ "$rows" = $H ] && [ "$((${per_node//,/+}))" = $H ]; then
    pass mandel.web.progress
else
    fail mandel.web.progress "$(cat "$TMP/progress")"
fi
# the full picture as served: every row, every node's hue
why=""
if check get "$URL/image.png?max=0" >"$TMP/full.png" &&
    why=$(check picture "$TMP/full.png" 0 0 $W $H "$per_node" 2>&1); then
    pass mandel.web.image
else
    fail mandel.web.image "${why:-cannot fetch it}"
fi

# the page, in a browser: after the end it fetches the final picture once
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
if [ -z "$browser" ]; then
    echo "SKIP mandel.web: chromium not installed"
else
    # --virtual-time-budget: the page's timers run until it has loaded the
    # final picture and stopped polling (virtual time waits for the fetches)
    timeout -k 2 60 "$browser" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --no-first-run --user-data-dir="$TMP/chromium" --hide-scrollbars --force-device-scale-factor=1 \
        --window-size=800,700 --virtual-time-budget=10000 --screenshot="$TMP/shot.png" --dump-dom "$URL/" \
        >"$TMP/dom.html" 2>"$TMP/chromium.err"
    rc=$?
    if [ $rc -eq 0 ] && grep -q '<progress id="progress" max="100" value="100">' "$TMP/dom.html" &&
        grep -q '<body data-final="1">' "$TMP/dom.html"; then
        pass mandel.web.page
    else
        fail mandel.web.page "chromium status $rc: $(grep -o '<progress[^>]*>\|<body[^>]*>' "$TMP/dom.html" | tr '\n' ' ') $(tail -n 2 "$TMP/chromium.err" | tr '\n' '|')"
    fi
    # the canvas: at the page's top left, its size in the DOM
    cw=$(sed -n 's/.*<canvas id="picture" width="\([0-9]*\)" height="[0-9]*".*/\1/p' "$TMP/dom.html")
    ch=$(sed -n 's/.*<canvas id="picture" width="[0-9]*" height="\([0-9]*\)".*/\1/p' "$TMP/dom.html")
    why=""
    if [ -f "$TMP/shot.png" ] && [ -n "$cw" ] && [ -n "$ch" ] &&
        why=$(check picture "$TMP/shot.png" 0 0 "$cw" "$ch" "$per_node" 2>&1); then
        pass mandel.web.screenshot
    else
        fail mandel.web.screenshot "${why:-no screenshot or no canvas}"
    fi
fi

# POST /quit ends the lingering at once; the summary is the plain run's
check post "$URL/quit" >/dev/null 2>&1
for ((i = 0; i < 100; i++)); do
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$SERVER" 2>/dev/null; then
    fail mandel.web.quit "still running 10 s after POST /quit"
else
    wait "$SERVER"
    rc=$?
    SERVER=""
    sum_web=$(sed -n 's/^checksum //p' "$TMP/serve.out")
    run "${LAUNCH[@]}" "$MANDEL" -q -s ${W}x$H -i 3000 -o "$TMP/c.png"
    if [ $rc -eq 0 ] && [ -n "$sum_web" ] && [ "$(summary checksum)" = "$sum_web" ]; then
        pass mandel.web.quit
    else
        fail mandel.web.quit "status $rc, checksum '$sum_web', without --serve '$(summary checksum)'"
    fi
fi
finish
