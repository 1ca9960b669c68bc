"""The page of :class:`socialjax.viz.Viewer`: its HTML, CSS and JavaScript as one
``string.Template``, filled by ``Viewer._repr_html_``. The script reads the viewer's
numbers from the JSON block inside the page and draws each step from them (no network,
no kernel): the frame or the timeline's cursor, a row per player (colour key, action,
reward, return, events), the game-level values, and the controls and keys."""

from string import Template

VALUE_PX = (150, 96)  # the table view's game-level table, CSS px: name, value

# The table view's game-level quantities of the step: a name and a value per row (filled by the page)
VALUES_TABLE = (f'<table style="width:{sum(VALUE_PX)}px"><colgroup><col style="width:{VALUE_PX[0]}px">'
                 f'<col style="width:{VALUE_PX[1]}px"></colgroup><tbody class="sjv-values"></tbody></table>')

# One viewer: $uid is fresh for every rendering; the script finds its elements inside it.
PAGE = Template("""\
<div class="$marker" id="$uid" tabindex="0" data-lm-suppress-shortcuts="true">
<style>
.$marker{font:13px/1.4 system-ui,sans-serif;color:#222;margin:4px 0;font-variant-numeric:tabular-nums}
.$marker:focus-visible{outline:2px solid #6a9bd8;outline-offset:2px} .$marker .sjv-play{width:4.5em}
.$marker .sjv-main{display:flex;gap:16px;align-items:flex-start;flex-wrap:wrap} .$marker .sjv-zero{color:#bbb}
.$marker .sjv-view,.$marker .sjv-side{flex:0 0 auto;max-width:100%} .$marker .sjv-side{max-height:80vh;overflow:auto}
.$marker img,.$marker svg{display:block;max-width:100%;height:auto} .$marker svg text{font-size:11px;fill:#666}
.$marker img{image-rendering:pixelated;image-rendering:crisp-edges} .$marker .sjv-slider{flex:1 1 auto;min-width:60px}
.$marker .sjv-controls{display:flex;gap:6px;align-items:center;margin-top:6px}
.$marker table{border-collapse:collapse;table-layout:fixed} .$marker .sjv-status{min-height:5.6em}
.$marker th,.$marker td{padding:2px 6px;text-align:right;border-bottom:1px solid #ddd;white-space:nowrap;
overflow:hidden;text-overflow:ellipsis} .$marker th{white-space:normal;vertical-align:bottom}
.$marker th:first-child,.$marker td:first-child{text-align:left} .$marker .sjv-ended{color:#b00;font-weight:600}
.$marker .sjv-swatch::before{content:"";display:inline-block;width:10px;height:10px;margin-right:6px;
background:var(--c);border:1px solid rgba(0,0,0,.45);vertical-align:-1px}
.$marker .sjv-keys,.$marker .sjv-caption{color:#777;font-size:12px}
</style>
<div><b>$title</b></div>
<div class="sjv-main">
<div class="sjv-view" style="width:${view_width}px">
$view
<div class="sjv-controls"><button class="sjv-back" title="step back (left arrow)">&#9664;</button>
<button class="sjv-play" title="play / pause (space)">play</button>
<button class="sjv-forward" title="step forward (right arrow)">&#9654;</button>
<input class="sjv-slider" type="range" min="0" max="$T" value="0" aria-label="step">
<label>fps <input class="sjv-fps" type="number" min="$min_fps" max="$max_fps" step="any" value="$fps"
 style="width:4em"></label></div>
<div class="sjv-status"><div class="sjv-step"></div><div class="sjv-ended"></div>
<div class="sjv-keys">keys (click the viewer first): space play / pause, &#8592; &#8594; step</div></div>
$values_table
</div>
<div class="sjv-side" style="width:${table_width}px">
<table style="width:${table_width}px"><colgroup>$cols</colgroup>
<thead><tr class="sjv-head"></tr></thead><tbody class="sjv-rows"></tbody></table></div>
</div>
<script type="application/json" class="sjv-data">$data</script>
<script>
(function () {
  var root = document.getElementById("$uid");
  var q = function (name) { return root.querySelector(".sjv-" + name); };
  var d = JSON.parse(q("data").textContent);
  var T = d.rewards.length, events = Object.keys(d.events), values = Object.keys(d.values), t = 0, timer = null;
  var img = q("frame"), slider = q("slider"), speed = q("fps"), play = q("play"), line = d.timeline;
  var label = function (name) { return d.labels[name] || name; };
  ["player", "action", "reward", "episode return"].concat(events.map(label)).forEach(function (h) {
    q("head").appendChild(document.createElement("th")).textContent = h;
  });
  var cells = d.players.map(function (player, i) {  // the colour key: a swatch before the label
    var tr = q("rows").insertRow(), row = [];
    for (var j = 0; j < 4 + events.length; j++) row.push(tr.insertCell());
    row[0].textContent = player;
    if (d.colours) { row[0].className = "sjv-swatch"; row[0].style.setProperty("--c", d.colours[i]); }
    return row;
  });
  var shown = values.map(function (name) {  // the table view's game-level quantities
    var tr = q("values").insertRow(); tr.insertCell().textContent = label(name); return tr.insertCell(); });
  function num(x) { return x === Math.round(x) ? String(x) : String(Number(x.toFixed(3))); }
  function act(a) {  // a vector, a named action, or a number
    if (Array.isArray(a)) return a.map(num).join(" ");
    return a === Math.round(a) && a >= 0 && a < d.action_names.length ? d.action_names[a] : num(a);
  }
  function show(k) {
    t = Math.max(0, Math.min(T, k));
    var s = t - 1;  // the step that led to frame t (none before frame 1)
    if (d.frames.length) img.src = "data:image/png;base64," + d.frames[t];
    if (line) {  // the timeline's cursor and the shade over the steps to come
      var x = line.x0 + line.dx * t;
      q("cursor").setAttribute("x1", x); q("cursor").setAttribute("x2", x);
      q("future").setAttribute("x", x); q("future").setAttribute("width", Math.max(0, line.x1 - x));
    }
    slider.value = t;
    q("step").textContent = "step " + t + " / " + T + (t === 0 ? " (reset)" : "");
    q("ended").textContent = s >= 0 && d.dones[s] ? "episode ended (the next step starts a new one)" : "";
    cells.forEach(function (row, i) {
      row[1].textContent = s < 0 ? "" : act(d.actions[s][i]); row[2].textContent = s < 0 ? "" : num(d.rewards[s][i]);
      row[3].textContent = s < 0 ? "0" : num(d.returns[s][i]);
      events.forEach(function (e, j) {
        var v = s < 0 ? 0 : d.events[e][s][i];
        row[4 + j].textContent = num(v);
        row[4 + j].className = v ? "" : "sjv-zero";
      });
    });
    shown.forEach(function (cell, j) { cell.textContent = s < 0 ? "" : num(d.values[values[j]][s]); });
  }
  function rate() { var f = parseFloat(speed.value); return f > 0 ? Math.min(f, $max_fps) : d.fps; }
  function stop() { clearTimeout(timer); timer = null; play.textContent = "play"; }
  function tick() { if (t >= T) { stop(); return; } show(t + 1); timer = setTimeout(tick, 1000 / rate()); }
  function toggle() {
    if (timer) { stop(); return; }
    if (t >= T) show(0);
    play.textContent = "pause"; timer = setTimeout(tick, 1000 / rate()); }
  function go(k) { stop(); show(k); }
  function focus() { root.focus({preventScroll: true}); }  // after a click, the keys work at once
  play.onclick = function () { toggle(); focus(); };
  q("back").onclick = function () { go(t - 1); focus(); };
  q("forward").onclick = function () { go(t + 1); focus(); };
  slider.oninput = function () { go(parseInt(slider.value, 10)); };
  var keys = {" ": toggle, ArrowLeft: function () { go(t - 1); }, ArrowRight: function () { go(t + 1); },
              Home: function () { go(0); }, End: function () { go(T); }};
  root.addEventListener("keydown", function (e) {
    var tag = String((e.target && e.target.tagName) || "").toUpperCase(), own = keys[e.key];
    if (!own || e.ctrlKey || e.metaKey || e.altKey || tag === "TEXTAREA" || tag === "SELECT") return;
    if (tag === "INPUT" && !(e.target.type === "range" && e.key === " ")) return;  // the inputs keep their keys
    if (tag === "BUTTON" && e.key === " ") return;  // a focused button clicks itself
    e.preventDefault(); own();
  });
  show(0);
})();
</script>
</div>""")
