// 交互图与活模型的懒加载（book_lazy.py 把它挂到有它们的页面上；普通脚本，defer 加载）。
// 页面先只带静态图；一张图离视口不到半屏时，才按顺序加载它 data-lazy-scripts 里列的脚本
// （Vega 库 gzip 后约 0.3 MB、活模型的参数约 0.25 MB），首屏不等它们，主线程也不为看不见的图忙。
// 用 <script> 标签而不是 import()：从 file:// 打开离线网站时，Chromium 只许普通脚本。
(() => {
  "use strict";
  const loading = new Map();   // 网址 → 加载它的 Promise：同一个脚本只加载一次

  function load(src) {
    if (!loading.has(src)) {
      loading.set(src, new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = src;
        script.onload = resolve;
        script.onerror = () => reject(new Error(`没能加载 ${src}（下面保留静态图）`));
        document.head.append(script);
      }));
    }
    return loading.get(src);
  }

  async function start(element) {
    try {
      for (const src of element.dataset.lazyScripts.split(" ")) await load(src);
    } catch (error) {
      element.dataset.ready = "error";
      console.error(error);
    }
  }

  const elements = [...document.querySelectorAll("[data-lazy-scripts]")];
  if (!("IntersectionObserver" in window)) {
    elements.forEach(start);
    return;
  }
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries.filter((e) => e.isIntersecting)) {
      observer.unobserve(entry.target);
      start(entry.target);
    }
  }, {rootMargin: "50% 0px"});
  elements.forEach((element) => observer.observe(element));
})();
