// 第 7 节的活模型（book_lazy.js 在读者翻到活模型时、数据文件之后插入它；普通脚本）。
// 参数来自页面旁边的数据文件（window.bookLiveModels，minigpt.live_model 导出）；前向计算全在这里，
// 与 minigpt.layers 一一对应：token 嵌入 + 位置嵌入 → 每层 x = LN(x + 多头注意力(x))，x = LN(x + FFN(x))
// （Post-LN；FFN 是 Linear → ReLU → Linear；每个 Linear 都带偏置；LayerNorm 的 eps 取自数据）→ 输出层。
// 注意力：分数 q·k / √d_k，因果遮蔽（位置 t 只看 0..t），按行 softmax。计算用 JavaScript 的 64 位浮点数。
(function () {
  "use strict";

  // 界面文字（英文版由 gettext 目录翻译：tools/i18n.py 提取引号里的中文）；{0}、{1} 是填进去的数
  const T = {
    sequence: "序列（0–15 的整数，用空格隔开）",
    random: "随机生成一条重复序列",
    strip: "序列里的各个位置（点一个就选中它）",
    stripItem: "位置 {0}：token {1}",
    position: "位置（方向键移动）",
    positionText: "{0}（token {1}）",
    token: "这个位置的 token（上下方向键改）",
    step: "训练步数（方向键移动）",
    stepText: "第 {0} 步",
    stepFinal: "第 {0} 步（训练结束）",
    head: "层 {0} · 头 {1}",
    headReadout: "最大的权重 {0} 在位置 {1}（token {2}）",
    prevNote: "；前一个位置 {0}：{1}",
    inductionNote: "；当前 token 早先出现处的下一个位置 {0}",
    inductionItem: "{0}：{1}",
    legendPrev: "前一个位置",
    legendInduction: "当前 token 早先出现处的下一个位置",
    legendOther: "其他位置",
    predictions: "位置 {0} 之后的下一个 token：模型的前 {1} 个预测",
    tokenColumn: "token",
    probColumn: "概率",
    actual: "序列里实际的下一个 token 是 {0}，模型给它的概率是 {1}。",
    noActual: "这是序列的最后一个位置，后面没有实际的 token 可以对照。",
    summary: "第 {0} 步的模型，位置 {1}（token {2}）：最可能的下一个 token 是 {3}，概率 {4}。",
    listSep: "，",
    badToken: "第 {0} 个数“{1}”不对：每个 token 应是 0 到 {2} 之间的整数。",
    badLength: "序列应有 1 到 {0} 个 token，现在是 {1} 个。",
    noData: "活模型的数据没有加载（应在页面旁边的数据文件里）。",
  };
  const TOP = 5;
  const fmt = (s, ...args) => s.replace(/\{(\d)\}/g, (_, i) => String(args[Number(i)]));
  const fix2 = (x) => x.toFixed(2);

  // ---------------------------------------------------------------- 参数
  function decode(snapshot, params) {
    const bin = atob(snapshot.weights);
    const n = bin.length / 4;                    // 四段字节位，每段 n 个字节
    const bytes = new Uint8Array(4);
    const view = new DataView(bytes.buffer);
    const flat = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < 4; k++) bytes[k] = bin.charCodeAt(k * n + i);
      flat[i] = view.getFloat32(0, true);         // 小端 float32，原样还原
    }
    const out = {};
    let at = 0;
    for (const [name, shape] of params) {
      const size = shape.reduce((a, b) => a * b, 1);
      out[name] = flat.subarray(at, at + size);
      at += size;
    }
    if (at !== n) throw new Error(`parameter count ${at} != ${n}`);
    return out;
  }

  // ---------------------------------------------------------------- 前向（与 minigpt.layers 相同）
  // x: [n, inDim]（按行展开）；W: torch 的 [out, in]；返回 [n, out]
  function linear(x, n, inDim, W, b, outDim) {
    const y = new Float64Array(n * outDim);
    for (let t = 0; t < n; t++) {
      for (let o = 0; o < outDim; o++) {
        let s = b[o];
        for (let i = 0; i < inDim; i++) s += x[t * inDim + i] * W[o * inDim + i];
        y[t * outDim + o] = s;
      }
    }
    return y;
  }

  function layerNorm(x, n, d, g, b, eps) {
    const y = new Float64Array(n * d);
    for (let t = 0; t < n; t++) {
      let mean = 0, v = 0;
      for (let i = 0; i < d; i++) mean += x[t * d + i];
      mean /= d;
      for (let i = 0; i < d; i++) v += (x[t * d + i] - mean) ** 2;
      const inv = 1 / Math.sqrt(v / d + eps);      // 有偏方差，与 nn.LayerNorm 相同
      for (let i = 0; i < d; i++) y[t * d + i] = (x[t * d + i] - mean) * inv * g[i] + b[i];
    }
    return y;
  }

  // 多头注意力：返回 [输出 [n, d], 权重 [heads][n][n]]
  function attention(x, n, d, heads, P, p) {
    const dk = d / heads;
    const q = linear(x, n, d, P[p + "W_Q.weight"], P[p + "W_Q.bias"], d);
    const k = linear(x, n, d, P[p + "W_K.weight"], P[p + "W_K.bias"], d);
    const v = linear(x, n, d, P[p + "W_V.weight"], P[p + "W_V.bias"], d);
    const merged = new Float64Array(n * d);
    const weights = [];
    for (let h = 0; h < heads; h++) {
      const wh = [];
      for (let t = 0; t < n; t++) {
        const row = new Array(n).fill(0);           // 遮住的 j > t 权重为 0
        let max = -Infinity;
        for (let j = 0; j <= t; j++) {
          let s = 0;
          for (let i = 0; i < dk; i++) s += q[t * d + h * dk + i] * k[j * d + h * dk + i];
          row[j] = s / Math.sqrt(dk);
          if (row[j] > max) max = row[j];
        }
        let sum = 0;
        for (let j = 0; j <= t; j++) { row[j] = Math.exp(row[j] - max); sum += row[j]; }
        for (let j = 0; j <= t; j++) row[j] /= sum;
        for (let i = 0; i < dk; i++) {
          let s = 0;
          for (let j = 0; j <= t; j++) s += row[j] * v[j * d + h * dk + i];
          merged[t * d + h * dk + i] = s;
        }
        wh.push(row);
      }
      weights.push(wh);
    }
    return [linear(merged, n, d, P[p + "W_O.weight"], P[p + "W_O.bias"], d), weights];
  }

  function forward(model, P, ids) {
    const n = ids.length, d = model.d_model, ff = model.d_ff, eps = model.eps;
    let x = new Float64Array(n * d);
    for (let t = 0; t < n; t++) {
      for (let i = 0; i < d; i++) x[t * d + i] = P["tok.weight"][ids[t] * d + i] + P["pos.weight"][t * d + i];
    }
    const attn = [];
    for (let l = 0; l < model.n_layers; l++) {
      const p = `blocks.${l}.`;
      const [a, w] = attention(x, n, d, model.num_heads, P, p + "attn.");
      attn.push(w);
      for (let i = 0; i < x.length; i++) a[i] += x[i];
      x = layerNorm(a, n, d, P[p + "ln_attn.weight"], P[p + "ln_attn.bias"], eps);
      const up = linear(x, n, d, P[p + "ffn.up.weight"], P[p + "ffn.up.bias"], ff);
      for (let i = 0; i < up.length; i++) up[i] = Math.max(up[i], 0);   // ReLU
      const down = linear(up, n, ff, P[p + "ffn.down.weight"], P[p + "ffn.down.bias"], d);
      for (let i = 0; i < x.length; i++) down[i] += x[i];
      x = layerNorm(down, n, d, P[p + "ln_ffn.weight"], P[p + "ln_ffn.bias"], eps);
    }
    const flat = linear(x, n, d, P["out.weight"], P["out.bias"], model.vocab);
    const logits = [];
    for (let t = 0; t < n; t++) logits.push(Array.from(flat.subarray(t * model.vocab, (t + 1) * model.vocab)));
    return {attn, logits};
  }

  function softmax(row) {
    const max = Math.max(...row);
    const e = row.map((z) => Math.exp(z - max));
    const s = e.reduce((a, b) => a + b, 0);
    return e.map((z) => z / s);
  }

  // 与 minigpt.heads.repeat_batch 同样的序列：随机前缀 + A（长度 4–10）+ A，共 seq_len + 1 个，模型读前 seq_len 个
  function randomRepeat(vocab, seqLen) {
    const total = seqLen + 1, L = 4 + Math.floor(Math.random() * 7);
    const ids = Array.from({length: total}, () => Math.floor(Math.random() * vocab));
    for (let t = total - L; t < total; t++) ids[t] = ids[t - L];
    return ids.slice(0, seqLen);
  }

  // ---------------------------------------------------------------- 界面
  function el(tag, attrs = {}, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function build(root, model) {
    const snapshots = model.snapshots.map((s) => ({step: s.step, P: decode(s, model.params)}));
    const last = snapshots.length - 1;
    const state = {ids: model.start.slice(), pos: model.position, snap: last};
    const uid = root.dataset.liveModel;
    const ui = root.querySelector(".live-model-ui");

    const controls = el("div", {class: "live-model-controls"});
    const seqLabel = el("label", {for: `${uid}-seq`}, T.sequence);
    const seqInput = el("input", {id: `${uid}-seq`, type: "text", name: "sequence", inputmode: "numeric",
                                  spellcheck: "false", autocomplete: "off", "aria-describedby": `${uid}-error`});
    const randomButton = el("button", {type: "button", class: "live-model-random"}, T.random);
    const error = el("p", {id: `${uid}-error`, class: "live-model-error", "aria-live": "polite"});
    const seqRow = el("div", {class: "live-model-row"});
    seqRow.append(seqInput, randomButton);
    const strip = el("div", {class: "live-model-strip", role: "group", "aria-label": T.strip});

    const posInput = el("input", {id: `${uid}-pos`, type: "range", name: "position", min: "0", step: "1"});
    const posOut = el("output", {for: `${uid}-pos`});
    const tokInput = el("input", {id: `${uid}-tok`, type: "number", name: "token", min: "0",
                                  max: String(model.vocab - 1), step: "1"});
    const stepInput = el("input", {id: `${uid}-step`, type: "range", name: "step", min: "0",
                                   max: String(last), step: "1"});
    const stepOut = el("output", {for: `${uid}-step`});
    const sliders = el("div", {class: "live-model-row"});
    for (const [label, input, out] of [[T.position, posInput, posOut], [T.token, tokInput, null],
                                       [T.step, stepInput, stepOut]]) {
      const box = el("div", {class: "live-model-field"});
      box.append(el("label", {for: input.id}, label), input);
      if (out) box.append(out);
      sliders.append(box);
    }
    controls.append(seqLabel, seqRow, error, strip, sliders);

    const legend = el("p", {class: "live-model-legend"});
    for (const [cls, text] of [["prev", T.legendPrev], ["induction", T.legendInduction], ["other", T.legendOther]]) {
      const item = el("span", {class: "live-model-key"});
      item.append(el("span", {class: `live-model-swatch ${cls}`, "aria-hidden": "true"}), document.createTextNode(text));
      legend.append(item);
    }
    const headsBox = el("div", {class: "live-model-heads"});
    const headViews = [];
    for (let l = 0; l < model.n_layers; l++) {
      for (let h = 0; h < model.num_heads; h++) {
        const box = el("section", {class: "live-model-head", "aria-labelledby": `${uid}-h${l}${h}`});
        const title = el("p", {id: `${uid}-h${l}${h}`, class: "live-model-head-title"}, fmt(T.head, l, h));
        const bars = el("div", {class: "live-model-bars", "aria-hidden": "true"});
        const readout = el("p", {class: "live-model-readout"});
        box.append(title, bars, readout);
        headsBox.append(box);
        headViews.push({l, h, bars, readout});
      }
    }
    const table = el("table", {class: "live-model-predictions"});
    const caption = el("caption");
    const thead = el("thead");
    const hr = el("tr");
    hr.append(el("th", {scope: "col"}, T.tokenColumn), el("th", {scope: "col"}, T.probColumn));
    thead.append(hr);
    const tbody = el("tbody");
    table.append(caption, thead, tbody);
    const actual = el("p", {class: "live-model-actual"});
    const summary = el("p", {class: "live-model-summary", "aria-live": "polite"});
    ui.append(controls, legend, headsBox, table, actual, summary);

    let revision = 0;
    function render() {
      const {ids, pos, snap} = state;
      const n = ids.length;
      const snapshot = snapshots[snap];
      const result = forward(model, snapshot.P, ids);
      // 界面：序列条（序列变了才重建按钮，不然键盘焦点会丢）
      if (strip.dataset.ids !== ids.join(" ")) {
        strip.dataset.ids = ids.join(" ");
        strip.replaceChildren(...ids.map((tok, t) => {
          const b = el("button", {type: "button", "aria-label": fmt(T.stripItem, t, tok)});
          b.append(el("span", {class: "live-model-pos"}, String(t)), el("span", {class: "live-model-tok"}, String(tok)));
          b.addEventListener("click", () => { state.pos = t; render(); });
          return b;
        }));
      }
      strip.querySelectorAll("button").forEach((b, t) => b.setAttribute("aria-pressed", String(t === pos)));
      posInput.max = String(n - 1);
      posInput.value = String(pos);
      posInput.setAttribute("aria-valuetext", fmt(T.positionText, pos, ids[pos]));
      posOut.textContent = fmt(T.positionText, pos, ids[pos]);
      if (document.activeElement !== tokInput || Number(tokInput.value) !== ids[pos]) tokInput.value = String(ids[pos]);
      stepInput.value = String(snap);
      const stepText = fmt(snap === last ? T.stepFinal : T.stepText, snapshot.step);
      stepInput.setAttribute("aria-valuetext", stepText);
      stepOut.textContent = stepText;
      // 每个头在位置 pos 的一行权重
      const earlier = new Set();
      for (let j = 1; j <= pos; j++) if (ids[j - 1] === ids[pos]) earlier.add(j);
      for (const view of headViews) {
        const row = result.attn[view.l][view.h][pos];
        view.bars.replaceChildren(...row.map((w, j) => {
          const kind = j === pos - 1 ? "prev" : earlier.has(j) ? "induction" : "other";
          const col = el("span", {class: `live-model-bar ${kind}` + (j > pos ? " masked" : "")});
          const fill = el("span", {class: "live-model-fill"});
          fill.style.height = `${(100 * w).toFixed(1)}%`;
          col.append(fill, el("span", {class: "live-model-label"}, String(ids[j])));
          return col;
        }));
        let top = 0;
        for (let j = 1; j <= pos; j++) if (row[j] > row[top]) top = j;
        let text = fmt(T.headReadout, fix2(row[top]), top, ids[top]);
        if (pos >= 1) text += fmt(T.prevNote, pos - 1, fix2(row[pos - 1]));
        if (earlier.size) {
          text += fmt(T.inductionNote, [...earlier].map((j) => fmt(T.inductionItem, j, fix2(row[j]))).join(T.listSep));
        }
        view.readout.textContent = text;
      }
      // 下一个 token 的预测
      const probs = softmax(result.logits[pos]);
      const order = probs.map((p, v) => v).sort((a, b) => probs[b] - probs[a]).slice(0, TOP);
      caption.textContent = fmt(T.predictions, pos, TOP);
      tbody.replaceChildren(...order.map((v) => {
        const tr = el("tr");
        const cell = el("td", {class: "live-model-prob"});
        const bar = el("span", {class: "live-model-prob-bar", "aria-hidden": "true"});
        bar.style.width = `${(100 * probs[v]).toFixed(1)}%`;
        cell.append(bar, el("span", {}, fix2(probs[v])));
        tr.append(el("td", {}, String(v)), cell);
        return tr;
      }));
      actual.textContent = pos + 1 < n ? fmt(T.actual, ids[pos + 1], fix2(probs[ids[pos + 1]])) : T.noActual;
      summary.textContent = fmt(T.summary, snapshot.step, pos, ids[pos], order[0], fix2(probs[order[0]]));
      // 给测试读的：完整精度的结果
      root.bookLiveResult = {ids: ids.slice(), pos, step: snapshot.step, attn: result.attn, logits: result.logits};
      root.dataset.revision = String(++revision);
    }

    function setIds(ids, fromText) {
      state.ids = ids;
      state.pos = Math.min(state.pos, ids.length - 1);
      if (!fromText) seqInput.value = ids.join(" ");
      error.textContent = "";
      seqInput.removeAttribute("aria-invalid");
      render();
    }

    seqInput.value = state.ids.join(" ");
    seqInput.addEventListener("input", () => {
      const parts = seqInput.value.trim().split(/[\s,，]+/).filter(Boolean);
      const bad = parts.findIndex((s) => !/^\d+$/.test(s) || Number(s) >= model.vocab);
      let message = "";
      if (bad >= 0) message = fmt(T.badToken, bad + 1, parts[bad], model.vocab - 1);
      else if (parts.length < 1 || parts.length > model.seq_len) message = fmt(T.badLength, model.seq_len, parts.length);
      if (message) {
        error.textContent = message;
        seqInput.setAttribute("aria-invalid", "true");
        return;
      }
      setIds(parts.map(Number), true);
    });
    randomButton.addEventListener("click", () => setIds(randomRepeat(model.vocab, model.seq_len), false));
    posInput.addEventListener("input", () => { state.pos = Number(posInput.value); render(); });
    tokInput.addEventListener("input", () => {
      const v = Number(tokInput.value);
      if (!Number.isInteger(v) || v < 0 || v >= model.vocab || tokInput.value === "") return;
      const ids = state.ids.slice();
      ids[state.pos] = v;
      setIds(ids, false);
    });
    stepInput.addEventListener("input", () => { state.snap = Number(stepInput.value); render(); });
    render();
    root.dataset.ready = "true";
  }

  for (const root of document.querySelectorAll(".live-model[data-live-model]")) {
    const model = (window.bookLiveModels || {})[root.dataset.liveModel];
    try {
      if (!model) throw new Error(T.noData);
      build(root, model);
    } catch (err) {
      root.dataset.ready = "error";
      console.error(err);
    }
  }
})();
