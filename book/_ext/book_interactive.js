// 本书交互图的页面脚本（book_interactive.py 把它与 vl-convert-python 的 Vega 库打包成一个 ES 模块，再包进一个函数，
// 作为普通脚本由 book_lazy.js 在读者翻到交互图时加载）。它只做三件事：读出页面里每张交互图的 Vega-Lite 说明、用 vegaEmbed 画出来、
// 把滑块旁的档位数字换成真实的取值（d_k、序列长度）。所有数都是构建时 minigpt 算好的。
async function bookRenderInteractive(figure) {
  const spec = JSON.parse(figure.querySelector("script.interactive-figure-spec").textContent);
  const target = figure.querySelector(".interactive-figure-chart");
  const result = await vegaEmbed(target, spec, {
    actions: false,            // 不要“在 Vega 编辑器中打开”之类指向其他网站的菜单
    renderer: "svg",           // SVG：坐标轴文字可以用 CSS 跟随浅色/深色主题
    defaultStyle: false,
  });
  const valuetext = (spec.usermeta && spec.usermeta.valuetext) || {};
  for (const [param, shown] of Object.entries(valuetext)) {
    const input = target.querySelector(`input[type="range"][name="${param}"]`);
    if (!input) continue;
    const value = input.nextElementSibling;   // Vega 写档位数字的 <span>
    const update = () => {
      const text = shown[Number(input.value)];
      input.setAttribute("aria-valuetext", text);
      if (value) value.textContent = text;
    };
    input.addEventListener("input", update);
    input.addEventListener("change", update);
    update();
  }
  // 单选组：Vega 只给了一个 <span> 作标题；告诉读屏软件这是一组、叫什么
  for (const group of target.querySelectorAll(".vega-bind-radio")) {
    const name = group.parentElement.querySelector(".vega-bind-name");
    group.setAttribute("role", "radiogroup");
    if (name) group.setAttribute("aria-label", name.textContent.replace(/[：:]\s*$/, ""));
  }
  bookChineseAria(target);
  new MutationObserver(() => bookChineseAria(target))   // Vega 每次重画都会重写这些属性
    .observe(target, {subtree: true, childList: true, attributes: true,
                      attributeFilter: ["aria-label", "aria-roledescription"]});
  figure.dataset.ready = "true";
  return result.view;
}

// Vega 自动给读屏软件写的说明是英文（“rect mark”“X-axis titled … for a linear scale …”）：换成中文。
const BOOK_MARK_NAMES = {rect: "格子", symbol: "数据点", line: "折线", text: "文字", rule: "参考线",
                         group: "图形", area: "面积", arc: "扇形", path: "路径", image: "图片",
                         bar: "柱", point: "数据点", tick: "刻度线", circle: "圆点", square: "方块"};
const BOOK_SCALE_NAMES = {linear: "线性", log: "对数", discrete: "离散", pow: "幂", sqrt: "平方根",
                          time: "时间", ordinal: "有序"};
function bookChineseRole(role) {
  if (role === "visualization") return "交互图";
  if (role === "axis") return "坐标轴";
  if (role === "legend") return "图例";
  if (role === "title") return "标题";
  if (BOOK_MARK_NAMES[role]) return BOOK_MARK_NAMES[role];     // Vega-Lite 写的 "bar"、"point"……
  const m = role.match(/^(\w+) mark( container)?$/);
  if (m) return (BOOK_MARK_NAMES[m[1]] || "图形") + (m[2] ? "组" : "");
  return role;
}
function bookChineseLabel(label) {
  let m = label.match(/^([XY])-axis(?: titled '(.*)')? for an? (\w+) scale with (?:values from (.*) to (.*)|(\d+) values?: (.*))$/s);
  if (m) {
    const [, xy, title, scale, lo, hi, n, values] = m;
    const head = (xy === "X" ? "横轴" : "纵轴") + (title ? `“${title}”` : "");
    const kind = (BOOK_SCALE_NAMES[scale] || scale) + "刻度";
    return lo !== undefined ? `${head}，${kind}，取值从 ${lo} 到 ${hi}`
      : `${head}，${kind}，共 ${n} 个取值：${values.replace(/,? ending with /, " …… ")}`;
  }
  m = label.match(/^Title text '(.*)'$/s);
  if (m) return `标题：${m[1]}`;
  m = label.match(/^(\w+) legend(?: titled '(.*)')? for .+? with (?:values from (.*) to (.*)|(\d+) values?: (.*))$/s);
  if (m) {
    const [, , title, lo, hi, n, values] = m;
    const head = "图例" + (title ? `“${title}”` : "");
    return lo !== undefined ? `${head}，取值从 ${lo} 到 ${hi}`
      : `${head}，共 ${n} 项：${values.replace(/,? ending with /, " …… ")}`;
  }
  return label;
}
function bookChineseAria(root) {
  const withRole = [root, ...root.querySelectorAll("[aria-roledescription]")];   // 图的容器自己也有
  for (const el of withRole.filter((e) => e.hasAttribute("aria-roledescription"))) {
    const role = el.getAttribute("aria-roledescription"), zh = bookChineseRole(role);
    if (zh !== role) el.setAttribute("aria-roledescription", zh);
  }
  for (const el of [root, ...root.querySelectorAll("[aria-label]")].filter((e) => e.hasAttribute("aria-label"))) {
    const label = el.getAttribute("aria-label"), zh = bookChineseLabel(label);
    if (zh !== label) el.setAttribute("aria-label", zh);
  }
}

for (const figure of document.querySelectorAll(".interactive-figure[data-figure]")) {
  bookRenderInteractive(figure).catch((error) => {
    figure.dataset.ready = "error";
    console.error(`交互图 ${figure.dataset.figure} 没能画出来（下面保留静态图）：`, error);
  });
}
