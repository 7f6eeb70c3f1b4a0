// 本书交互图的页面脚本（由 book_interactive.py 与 vl-convert-python 的 Vega 库打包成一个 ES 模块）。
// 它只做三件事：读出页面里每张交互图的 Vega-Lite 说明、用 vegaEmbed 画出来、
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
  figure.dataset.ready = "true";
  return result.view;
}

for (const figure of document.querySelectorAll(".interactive-figure[data-figure]")) {
  bookRenderInteractive(figure).catch((error) => {
    figure.dataset.ready = "error";
    console.error(`交互图 ${figure.dataset.figure} 没能画出来（下面保留静态图）：`, error);
  });
}
