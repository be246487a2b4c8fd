"""The seeds' custom Scheduler: which communicator's frame goes first when QoS classes compete.
hcomm-run -n 2 python3 examples/python/scheduler.py"""

import numpy as np

import hcomm


class MyScheduler(hcomm.Scheduler):
    def schedule(self, tasks):
        # task priority scheduling: highest QoS priority first, then the smaller frame
        return sorted(tasks, key=lambda t: (-t.priority, t.bytes))


hcomm.set_scheduler(MyScheduler())
hcomm.set_qos(min_rate=30, max_rate=70, priority=2)
x = np.ones(1 << 20, dtype=np.float32)
hcomm.all_reduce(x)
hcomm.set_scheduler(None)
if hcomm.get_rank() == 0:
    print(f"all_reduce under a Python scheduler and QoS {hcomm.default().qos()}: {x[0]:.0f}")
