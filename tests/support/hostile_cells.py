"""批改测试共用的几个恶意单元（学生代码）：占满进程数上限的 fork，和让内核崩溃的一行。"""

FORK_BOMB = """\
import os, time
kids = 0
try:
    for _ in range(400):
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        kids += 1
except OSError as err:
    print(kids, err)"""

CRASH = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"
