"""minigpt：《Attention 机制与 Transformer Block》的配套代码包。

书里的每一个计算都在这里，书页在构建时直接运行它：

- `minigpt.data`：玩具词表与第 1 节的 X、Q、K、V；
- `minigpt.attention`：缩放点积注意力的四步与因果遮蔽（第 2、3 节）；
- `minigpt.layers`：多头注意力、FFN、Transformer Block（第 4–6 节）；
- `minigpt.heads`：训练一个小 GPT，量它的头学到了什么（第 7 节）；
- `minigpt.experiments`：第 2 节 √d_k 的实验，附录里 RNN 与 Attention 的梯度实验；
- `minigpt.plots`：书中配图（单独导入；画图前先调用 `notebook.setup_notebook()`）；
- `minigpt.interactive`：网站上的交互图（单独导入；PDF 里是同一张静态图）；
- `minigpt.homework`：作业检查。
"""

# 版本号唯一的出处（pyproject.toml 经 setuptools 读它）。
# 主版本号就是书的第几版（3.x.y 是第 3 版），更新记录见 book/changelog.md。
__version__ = "4.0.0"
