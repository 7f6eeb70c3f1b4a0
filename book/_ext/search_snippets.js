// 搜索结果的摘要只从正文（<article>）里取。Sphinx 7.4 的 searchtools.js 用页面里 [role="main"] 的全部文字，
// 而主题在那里面还放了页首按钮、只在打印时显示的标题与目录、右侧的本页目录，摘要就以“.pdf 因果遮蔽 目录 …”开头。
// 这里在 Sphinx 取文字之前，把 [role="main"] 里除 <article> 之外的东西都去掉；带锚点的结果照旧取那一节。
// 公式只留看得见的字形（见下）。由 book/_ext/book_search.py 只加到搜索页上；searchtools.js 在本脚本之后才加载，所以等到 DOMContentLoaded。
document.addEventListener("DOMContentLoaded", () => {
  if (typeof Search === "undefined" || typeof Search.htmlToText !== "function") return;
  const sphinxHtmlToText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    const main = doc.querySelector('[role="main"]');
    const article = doc.querySelector("article.bd-article");
    if (main && article) main.replaceChildren(article);
    // 构建时排好的公式（book_math.py）里除了看得见的字形，还有给屏幕阅读器的 MathML 与 TeX 源码：
    // 摘要里只留看得见的那一份，否则 j>i 会印成 “j>ij>ij>i”
    doc.querySelectorAll(".katex-mathml").forEach((mathml) => mathml.remove());
    return sphinxHtmlToText(doc.documentElement.outerHTML, anchor);
  };
});
