"""生成分享链接时显示的图片 book/_static/og-image.png（1200×630，OpenGraph 推荐的尺寸）。

图上是书名和 “the cat sat” 玩具例子（种子 42，第 1–2 节）的注意力权重热力图，数由 minigpt 现场算出。
图片提交在仓库里（网站构建不必每次重画）；改了书名或例子之后运行：.venv/bin/python tools/make_og_image.py
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from minigpt import attention  # noqa: E402
from minigpt.data import make_toy_example  # noqa: E402
from minigpt.notebook import setup_notebook  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "book" / "_static" / "og-image.png"


def main() -> None:
    setup_notebook()  # 中文字体
    ex = make_toy_example(("the", "cat", "sat"), d_model=4, d_k=4, seed=42)
    weights = attention.softmax_weights(attention.scale_scores(attention.attention_scores(ex.Q, ex.K), 4))
    fig = plt.figure(figsize=(12, 6.3), dpi=100)
    fig.patch.set_facecolor("#20435c")
    fig.text(0.06, 0.62, "Attention 机制与\nTransformer Block", color="white", fontsize=44, weight="bold",
             va="center", linespacing=1.3)
    fig.text(0.06, 0.25, "一本可执行的中文小书：从手算一次注意力到完整的 Block", color="#cfe0ea", fontsize=20)
    ax = fig.add_axes((0.66, 0.2, 0.28, 0.6))
    ax.imshow(weights.detach().numpy(), cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(3), ex.words, color="white", fontsize=16)
    ax.set_yticks(range(3), ex.words, color="white", fontsize=16)
    for i in range(3):
        for j in range(3):
            ax.text(j, i, f"{weights[i, j]:.2f}", ha="center", va="center", fontsize=15, color="#102030")
    fig.savefig(OUT, facecolor=fig.get_facecolor(), metadata={"Software": None})
    print(OUT)


if __name__ == "__main__":
    main()
