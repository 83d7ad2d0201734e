// The live view of dgen ui: polls the tenant's points and draws two SVG line charts.
// No framework, no build step; loaded from this server only (the page's CSP allows nothing else).
(function () {
  "use strict";
  var root = document.getElementById("live");
  if (!root) {
    return;
  }
  var src = root.getAttribute("data-src");
  var poll = parseInt(root.getAttribute("data-poll"), 10) || 3000;
  var status = document.getElementById("live-status");
  var SVG = "http://www.w3.org/2000/svg";
  var W = 720, H = 180, PAD = 44;

  function el(name, attrs, text) {
    var e = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) {
      e.textContent = text; // text only: nothing from the server is parsed as markup
    }
    return e;
  }

  function fmt(v) {
    if (v >= 1e6) { return (v / 1e6).toFixed(1) + "M"; }
    if (v >= 1e4) { return (v / 1e3).toFixed(0) + "k"; }
    return (Math.round(v * 10) / 10).toString();
  }

  function draw(id, points, key) {
    var box = document.getElementById(id);
    var data = points.filter(function (p) { return typeof p[key] === "number"; });
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "class": "plot", "data-points": String(data.length) });
    if (data.length === 0) {
      svg.appendChild(el("text", { x: PAD, y: H / 2, "class": "empty" }, "no data yet"));
      box.replaceChildren(svg);
      return;
    }
    var t0 = data[0].t, t1 = data[data.length - 1].t;
    var max = Math.max.apply(null, data.map(function (p) { return p[key]; }));
    if (max <= 0) { max = 1; }
    var span = Math.max(1, t1 - t0);
    function x(t) { return PAD + (W - PAD - 10) * (t - t0) / span; }
    function y(v) { return H - 24 - (H - 34) * v / max; }
    svg.appendChild(el("line", { x1: PAD, y1: H - 24, x2: W - 10, y2: H - 24, "class": "axis" }));
    svg.appendChild(el("line", { x1: PAD, y1: 10, x2: PAD, y2: H - 24, "class": "axis" }));
    svg.appendChild(el("text", { x: PAD - 4, y: 16, "class": "tick", "text-anchor": "end" }, fmt(max)));
    svg.appendChild(el("text", { x: PAD - 4, y: H - 24, "class": "tick", "text-anchor": "end" }, "0"));
    svg.appendChild(el("text", { x: PAD, y: H - 6, "class": "tick" }, new Date(t0).toLocaleTimeString()));
    svg.appendChild(el("text", { x: W - 10, y: H - 6, "class": "tick", "text-anchor": "end" }, new Date(t1).toLocaleTimeString()));
    var pts = data.map(function (p) { return x(p.t).toFixed(1) + "," + y(p[key]).toFixed(1); }).join(" ");
    svg.appendChild(el("polyline", { points: data.length === 1 ? pts + " " + pts : pts, "class": "line" }));
    var lastP = data[data.length - 1];
    svg.appendChild(el("circle", { cx: x(lastP.t), cy: y(lastP[key]), r: 3, "class": "dot" }));
    box.replaceChildren(svg);
  }

  function update() {
    fetch(src, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.json();
      })
      .then(function (d) {
        draw("depth-chart", d.points, "depth");
        draw("rate-chart", d.points, "rate");
        var last = d.points.length ? d.points[d.points.length - 1] : null;
        var text = d.error ? "scan failed: " + d.error
          : last === null ? "Waiting for the first scan…"
          : d.servers + (d.capped ? "+" : "") + " servers, " + last.depth + " queued; scan took " + d.scanMillis + " ms"
            + (d.scanning >= 0 ? " · scanning: " + d.scanning + " so far" : "");
        status.textContent = text;
        status.setAttribute("data-points", String(d.points.length));
      })
      .catch(function (e) { status.textContent = "cannot reach the dashboard: " + e.message; })
      .finally(function () { setTimeout(update, poll); });
  }
  update();
})();
