// pjc's HTML report (crates/pjc/src/report.rs gathers the data; this draws it).
// Every number shown comes formatted from the compiler; this script lays it out,
// draws the device grids and the memory timeline, and marks the body
// data-rendered=ok when it has finished without an error (the browser test
// in crates/pjc/tests/report.rs reads that and #errors).
"use strict";
(function () {
  const errors = [];
  function fail(msg) {
    errors.push(String(msg));
    const pre = document.getElementById("errors");
    pre.hidden = false;
    pre.textContent = "report script errors:\n" + errors.join("\n");
    document.body.setAttribute("data-errors", String(errors.length));
  }
  window.addEventListener("error", (e) => fail(e.message || "error"));

  const SVG = "http://www.w3.org/2000/svg";
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k === "onclick") e.addEventListener("click", v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const k of kids.flat()) {
      if (k === null || k === undefined) continue;
      e.appendChild(typeof k === "string" ? document.createTextNode(k) : k);
    }
    return e;
  }
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const k of kids.flat()) if (k) e.appendChild(typeof k === "string" ? document.createTextNode(k) : k);
    return e;
  }
  const td = (text, cls) => el("td", { class: cls, text: text });
  const th = (text, cls) => el("th", { class: cls, text: text });
  const lineLink = (line, text) => (line ? el("a", { href: "#L" + line, title: "source line " + line, text: text || "line " + line }) : document.createTextNode(text || ""));
  function table(headers, rows, cls) {
    return el("table", { class: "t " + (cls || "") }, el("thead", {}, el("tr", {}, headers.map((h) => (Array.isArray(h) ? th(h[0], h[1]) : th(h))))), el("tbody", {}, rows));
  }
  // One colour per set of devices (by its first device), as visualize_array_sharding does.
  function colour(devs) {
    if (!devs.length) return "#eee";
    const h = (devs[0] * 137.508) % 360;
    return "hsl(" + h.toFixed(1) + ", 62%, " + (devs.length > 1 ? 84 : 74) + "%)";
  }

  function grid(g, name) {
    const t = el("table", { class: "grid", "data-value": name });
    if (g.cols.length > 1 || g.col_dims.length) {
      t.appendChild(el("tr", {}, el("th", {}), g.cols.map((c) => el("th", { text: g.col_dims.length ? c : "" }))));
    }
    g.cells.forEach((row, r) => {
      t.appendChild(
        el("tr", {}, el("th", { class: "rowlabel", text: g.row_dims.length ? g.rows[r] : "" }),
          row.map((devs, c) => el("td", { class: "cell", style: "background:" + colour(devs), title: "devices " + devs.join(", "), text: g.labels[r][c] })))
      );
    });
    return t;
  }
  function layout(v, g) {
    const dims = (ds) => ds.map((d) => "dim " + d).join(" × ");
    if (!g.row_dims.length && !g.col_dims.length) return "one block";
    const parts = [];
    if (g.row_dims.length) parts.push("down: " + dims(g.row_dims));
    if (g.col_dims.length) parts.push("across: " + dims(g.col_dims));
    return parts.join("; ");
  }
  function card(v) {
    return el("div", { class: "card", "data-value": v.name },
      el("h4", {}, lineLink(v.line, v.name), " ", el("span", { class: "mono", text: v.global + " on " + v.sharding })),
      el("div", { class: "meta" }, "per device " + v.local + " (" + v.local_bytes + " B of " + v.global_bytes + " B); " + (v.grid ? layout(v, v.grid) : "")),
      v.grid ? grid(v.grid, v.name) : el("div", { class: "note", text: "too many blocks or devices to draw" }));
  }

  function header(D) {
    const p = D.plan;
    const items = [
      ["file", D.file], ["entry", "@" + D.entry], ["mesh", D.mesh + " (" + D.devices + " device" + (D.devices === 1 ? "" : "s") + ")"],
      ["collectives", D.collectives.rows.length + " inserted, " + D.collectives.total + " B per device"],
    ];
    if (p) {
      items.push(["kernel plan", p.counts.kernels + " fused kernels, " + p.counts.library + " library calls, " + p.counts.collectives + " collectives"]);
      items.push(["peak memory", p.peak + " bytes per device"]);
    } else if (D.plan_error) items.push(["kernel plan", "not available: " + D.plan_error]);
    if (D.trace) items.push(["trace", D.trace.path]);
    const dl = el("dl", { class: "summary" });
    for (const [k, v] of items) dl.append(el("dt", { text: k }), el("dd", { text: v }));
    return [el("h1", { text: "pjc report: " + D.file }), dl];
  }

  function shardings(D) {
    const out = [el("h2", { id: "shardings", text: "Shardings" }),
      el("p", { class: "note", text: "Which device holds which block (device ids, row-major over the mesh). Drawn: parameters, results, and values whose sharding changes or that a collective serves; click any row of the table to draw it." })];
    const detail = el("div", { id: "detail", hidden: true });
    for (const f of D.funcs) {
      out.push(el("h3", { text: (f.spmd ? "spmd func @" : "func @") + f.name }));
      if (f.spmd) {
        out.push(el("p", { class: "note", text: "per-device view: no propagation inside (its signature gives the shardings)" }));
        continue;
      }
      // Split values get a grid each; replicated ones, one block on every device, a line.
      out.push(el("div", { class: "cards" }, f.rows.filter((v) => v.draw && v.split).map(card)));
      const whole = f.rows.filter((v) => v.draw && !v.split).map((v) => v.name);
      if (whole.length) out.push(el("p", { class: "note replicated", text: "replicated (every device holds the whole value): " + whole.join(", ") }));
      const rows = f.rows.map((v) => {
        const why = el("td", {}, v.why);
        if (v.why_full !== v.why) why.append(el("details", {}, el("summary", { text: "full" }), el("div", { class: "why-full", text: v.why_full })));
        const tr = el("tr", { class: "val", "data-func": f.name },
          el("td", { class: "mono" }, lineLink(v.line, v.name)), td(v.op), td(v.global, "mono"), td(v.sharding, "mono"), td(v.local, "mono"),
          td(String(v.global_bytes), "num"), td(String(v.local_bytes), "num"), why);
        tr.addEventListener("click", (e) => {
          if (e.target.closest("a, details")) return;
          document.querySelectorAll("tr.val.selected").forEach((x) => x.classList.remove("selected"));
          tr.classList.add("selected");
          detail.hidden = false;
          detail.replaceChildren(card(v));
          tr.closest("table").before(detail);
        });
        return tr;
      });
      out.push(table(["value", "op", "global", "sharding", "per device", ["bytes", "num"], ["per device", "num"], "why"], rows, "values"));
    }
    return out;
  }

  function collectives(D) {
    const c = D.collectives;
    const out = [el("h2", { id: "collectives", text: "Collectives inserted by the partitioner" }),
      el("p", { class: "note", text: "Bytes sent per device by the ring formulas; groups: the sets of devices that run each one together." })];
    if (!c.rows.length) return out.concat([el("p", { text: "none" })]);
    const rows = c.rows.map((x) =>
      el("tr", { class: "coll" }, td(x.value, "mono"), td(x.op), td(x.axes.join(", ")),
        td(x.groups.map((g) => "{" + g.join(",") + "}").join(" "), "mono"), td(String(x.bytes), "num"),
        el("td", { class: "mono" }, x.serves ? lineLink(x.line, x.serves) : ""), td(x.reason)));
    rows.push(el("tr", { class: "total" }, td("total: " + c.rows.length + " collective" + (c.rows.length === 1 ? "" : "s")), td(""), td(""), td(""), td(String(c.total), "num"), td(""), td("")));
    return out.concat([table(["value", "op", "over", "groups", ["B per device", "num"], "serves", "reason"], rows, "collectives")]);
  }

  const KIND_COLOURS = { parameter: "#6c8ebf", result: "#d79b00", temporary: "#82b366", constant: "#9673a6", "axis indices": "#999999" };
  function memory(D) {
    const p = D.plan;
    const out = [el("h2", { id: "memory", text: "Memory per device" })];
    if (!p) return out.concat([el("p", { text: "not available: " + (D.plan_error || "no kernel plan") })]);
    out.push(el("p", {}, "Arena peak ", el("b", { id: "peak", text: String(p.peak) }), " bytes per device. " + p.fullest.line));
    const E = p.events.length + 1; // event numbers 0..E
    const W = 1000, H = 300, L = 70, T = 10, B = 40;
    const peak = Math.max(p.peak, 1);
    const x = (e) => L + (e / (E + 1)) * (W - L - 10);
    const y = (b) => T + (1 - b / peak) * (H - T - B);
    const s = svg("svg", { viewBox: "0 0 " + W + " " + (H + 150), width: "100%", id: "timeline", role: "img" });
    s.append(svg("text", { x: 4, y: T + 10 }, "offset"));
    s.append(svg("line", { class: "axis", x1: L, y1: H - B, x2: W - 10, y2: H - B }), svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
    for (const b of p.buffers) {
      const top = b.offset + Math.max(b.bytes, 1);
      const r = svg("rect", { class: "buf", x: x(b.def), y: y(top), width: Math.max(x(b.last + 1) - x(b.def), 1), height: Math.max(y(b.offset) - y(top), 1), fill: KIND_COLOURS[b.kind] || "#aaa", "data-buffer": b.name });
      r.append(svg("title", {}, b.name + " " + b.ty + " (" + b.kind + (b.donated ? ", in its parameter's memory" : "") + "): " + b.bytes + " B at offset " + b.offset + ", live from event " + b.def + " to " + b.last));
      s.append(r);
    }
    s.append(svg("line", { class: "peak", x1: L, y1: y(p.peak), x2: W - 10, y2: y(p.peak) }), svg("text", { x: L + 4, y: y(p.peak) + 12, fill: "#c0392b" }, "arena peak " + p.peak + " B"));
    s.append(svg("text", { x: L - 4, y: H - B + 4, "text-anchor": "end" }, "0"));
    s.append(svg("text", { x: W / 2, y: H - B + 28, "text-anchor": "middle" }, "step (event) number, 0 = before the first, " + E + " = after the last"));
    // Bytes live at each event (donated results count in their parameter).
    const live = new Array(E + 2).fill(0);
    for (const b of p.buffers) {
      if (b.donated) continue;
      for (let e = b.def; e <= Math.min(b.last, E); e++) live[e] += Math.ceil(Math.max(b.bytes, 1) / 64) * 64;
    }
    const most = Math.max(...live, 1);
    const cy = (v) => H + 140 - (v / most) * 120;
    let d = "M " + x(0) + " " + cy(0);
    for (let e = 0; e <= E; e++) d += " L " + x(e) + " " + cy(live[e]) + " L " + x(e + 1) + " " + cy(live[e]);
    d += " L " + x(E + 1) + " " + cy(0) + " Z";
    s.append(svg("text", { x: 4, y: H + 24 }, "live bytes"), svg("path", { class: "livecurve", d: d }));
    const at = p.fullest.at;
    s.append(svg("line", { class: "peak", x1: x(at + 0.5), y1: T, x2: x(at + 0.5), y2: H + 140 }),
      svg("text", { x: x(at + 0.5) + (at > E / 2 ? -4 : 4), y: H + 30, fill: "#c0392b", id: "fullest", "text-anchor": at > E / 2 ? "end" : "start" }, "most live: " + p.fullest.bytes + " B at step " + at + " of " + p.fullest.of + (p.fullest.step ? " (" + p.fullest.step + ")" : "")));
    out.push(s);
    out.push(el("div", { class: "legend" }, Object.entries(KIND_COLOURS).map(([k, c]) => el("span", {}, el("i", { style: "background:" + c }), k))));
    const rows = p.buffers.map((b) => el("tr", { class: "buffer" }, td(b.name, "mono"), td(b.ty, "mono"), td(b.kind + (b.donated ? " (donated)" : "")), td(String(b.bytes), "num"), td(String(b.offset), "num"), td(String(b.def), "num"), td(String(b.last), "num")));
    out.push(el("details", {}, el("summary", { text: "every buffer (" + p.buffers.length + ")" }), table(["buffer", "type", "kind", ["bytes", "num"], ["offset", "num"], ["live from", "num"], ["to", "num"]], rows)));
    return out;
  }

  function plan(D) {
    const p = D.plan;
    const out = [el("h2", { id: "plan", text: "Kernel plan" })];
    if (!p) return out.concat([el("p", { text: "not available: " + (D.plan_error || "") })]);
    out.push(el("p", {}, el("span", { id: "count-kernels", text: String(p.counts.kernels) }), " fused kernels, ",
      el("span", { id: "count-library", text: String(p.counts.library) }), " library calls, ",
      el("span", { id: "count-collectives", text: String(p.counts.collectives) }), " collectives; steps in order (a control step's blocks follow it)."));
    const rows = p.steps.map((s) => el("tr", { class: "step" }, td(String(s.n), "num"), td(s.kind), td(s.name, "mono"),
      td(s.ops.map((o) => o.value + " " + o.op).join(", "), "mono"), td(s.outputs.join(", "), "mono"), td(s.cpu), td(s.cuda)));
    out.push(table([["#", "num"], "kind", "step", "fuses (value op)", "writes", "on CPU", "on CUDA"], rows, "steps"));
    if (D.ratio) out.push(el("pre", { id: "ratio", text: D.ratio }));
    return out;
  }

  const PARTS = [["compute", "#4e79a7"], ["collectives", "#e15759"], ["waiting", "#f28e2b"], ["other", "#bab0ac"]];
  function trace(D) {
    const t = D.trace;
    if (!t) return [];
    const out = [el("h2", { id: "trace", text: "Measured step time per rank" }),
      el("p", { class: "note", text: t.path + ": per step" + (t.ranks[0].steps > 1 ? " (mean of " + t.ranks[0].steps + " steps)" : "") + "; asynchronous collectives run beside the step loop and are shown apart." })];
    const most = Math.max(...t.ranks.map((r) => Math.max(r.us.step, PARTS.reduce((a, [k]) => a + r.us[k], 0))), 1e-9);
    const rows = t.ranks.map((r) => {
      const bar = el("div", { class: "bar", style: "width:" + Math.max(2, (300 * Math.max(r.us.step, 0)) / most).toFixed(1) + "px" },
        PARTS.map(([k, c]) => el("div", { style: "background:" + c + ";width:" + ((100 * r.us[k]) / Math.max(r.us.step, PARTS.reduce((a, [q]) => a + r.us[q], 0), 1e-9)).toFixed(2) + "%", title: k + " " + r.text[k] })));
      return el("tr", { class: "rank" }, td(String(r.rank), "num"), td(r.text.step, "num"), td(r.text.compute, "num"), td(r.text.collectives, "num"), td(r.text.waiting, "num"), td(r.text.other, "num"), td(r.text.async, "num"), el("td", {}, bar));
    });
    out.push(table([["rank", "num"], ["step", "num"], ["compute", "num"], ["collectives", "num"], ["waiting", "num"], ["other", "num"], ["asynchronous", "num"], "split"], rows, "ranks"));
    out.push(el("div", { class: "legend" }, PARTS.map(([k, c]) => el("span", {}, el("i", { style: "background:" + c }), k))));
    return out;
  }

  function source(D) {
    const pre = el("pre", { class: "src", id: "source-text" }, D.source.map((l, i) => el("span", { class: "line", id: "L" + (i + 1) }, el("span", { class: "ln", text: String(i + 1) }), l)));
    return [el("h2", { id: "source", text: "Source: " + D.file }), pre];
  }

  function render() {
    const D = JSON.parse(document.getElementById("pjc-data").textContent);
    const app = document.getElementById("app");
    const nav = el("nav", {}, [["shardings", "Shardings"], ["collectives", "Collectives"], ["memory", "Memory"], ["plan", "Kernel plan"]]
      .concat(D.trace ? [["trace", "Trace"]] : []).concat([["source", "Source"], ["text", "Text"]]).map(([id, t]) => el("a", { href: "#" + id, text: t })));
    app.replaceChildren(...header(D), nav, ...shardings(D), ...collectives(D), ...memory(D), ...plan(D), ...trace(D), ...source(D),
      el("h2", { id: "text", text: "pjc explain (text)" }), el("details", {}, el("summary", { text: "show" }), el("pre", { id: "explain-text", text: D.text })));
    if (location.hash) {
      const target = document.getElementById(location.hash.slice(1));
      if (target) target.scrollIntoView();
    }
  }

  try {
    render();
    if (!errors.length) document.body.setAttribute("data-rendered", "ok");
  } catch (e) {
    fail((e && e.stack) || e);
  }
})();
