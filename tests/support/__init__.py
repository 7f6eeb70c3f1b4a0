"""测试的支撑代码（不是测试）：小书与构建、两个工作进程的分组与共用、全新虚拟环境、Chromium 与截图、
读渲染后页面的 pagekit、原文数字 golden、分叉运行器 forkrun，以及几组测试共用的案例表（*_cases）。

tests/ 下只放测试模块和把夹具接起来的 conftest.py；测试从这里 import，不从 conftest import。"""
