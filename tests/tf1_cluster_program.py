"""A TF1 between-graph training program as people wrote them (ClusterSpec, Server,
replica_device_setter, MonitoredTrainingSession), run by tests/test_tf1_cluster_mpi.py under
mpirun with each task's own flags.  Each worker writes its final variables to --out."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import collflow.compat.v1 as tf  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--job_name", default="worker")
p.add_argument("--task_index", type=int, default=0)
p.add_argument("--ps_hosts", default="localhost:2222")
p.add_argument("--worker_hosts", default="localhost:2223,localhost:2224")
p.add_argument("--mode", default="async", choices=["async", "sync", "sync_backup"])
p.add_argument("--optimizer", default="sgd", choices=["sgd", "momentum", "adam", "adagrad"])
p.add_argument("--steps", type=int, default=6)
p.add_argument("--out", default="")
p.add_argument("--loop", default="monitored", choices=["monitored", "supervisor"])
a = p.parse_args()

cluster = tf.train.ClusterSpec({"ps": a.ps_hosts.split(","), "worker": a.worker_hosts.split(",")})
server = tf.train.Server(cluster, job_name=a.job_name, task_index=a.task_index)
if a.job_name == "ps":
    server.join()
    print(f"ps {a.task_index} joined", flush=True)
    sys.exit(0)

num_workers = cluster.num_tasks("worker")
with tf.device(tf.train.replica_device_setter(worker_device=f"/job:worker/task:{a.task_index}", cluster=cluster)):
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    emb = tf.get_variable("emb", [6, 3], initializer=tf.random_normal_initializer(seed=1))
    ids = tf.placeholder(tf.int32, [None])
    w = tf.get_variable("w", [3, 1], initializer=tf.random_normal_initializer(seed=2))
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    h = x + tf.nn.embedding_lookup(emb, ids)
    loss = tf.reduce_mean(tf.square(tf.matmul(h, w) + b - y))
    global_step = tf.train.get_or_create_global_step()
    opt = {"sgd": lambda: tf.train.GradientDescentOptimizer(0.05),
           "momentum": lambda: tf.train.MomentumOptimizer(0.05, 0.9),
           "adam": lambda: tf.train.AdamOptimizer(0.05),
           "adagrad": lambda: tf.train.AdagradOptimizer(0.1)}[a.optimizer]()
    hooks = [tf.train.StopAtStepHook(last_step=a.steps * (num_workers if a.mode == "async" else 1))]
    if a.mode != "async":
        opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=num_workers - (a.mode == "sync_backup"),
                                             total_num_replicas=num_workers)
        hooks.append(opt.make_session_run_hook(a.task_index == 0))
    train_op = opt.minimize(loss, global_step=global_step)


def batch(task, step):
    r = np.random.RandomState(100 * task + step)
    return {x: r.rand(4, 3).astype(np.float32), y: r.rand(4, 1).astype(np.float32),
            ids: r.randint(0, 6, 4).astype(np.int32)}


step = 0
is_chief = a.task_index == 0
if a.loop == "monitored":
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief, hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train_op, batch(a.task_index, step))
            step += 1
        vals = sess.run([emb, w, b, global_step])
else:  # TF's mnist_replica.py: a Supervisor and the sync optimizer's queue interface
    local_init_op = opt.chief_init_op if is_chief else opt.local_step_init_op
    sv = tf.train.Supervisor(is_chief=is_chief, init_op=tf.global_variables_initializer(),
                             local_init_op=local_init_op, ready_for_local_init_op=opt.ready_for_local_init_op,
                             recovery_wait_secs=1, global_step=global_step)
    sess = sv.prepare_or_wait_for_session(server.target)
    if is_chief:
        sess.run(opt.get_init_tokens_op())
        sv.start_queue_runners(sess, [opt.get_chief_queue_runner()])
    while True:
        _, gs = sess.run([train_op, global_step], batch(a.task_index, step))
        step += 1
        if gs + 1 >= a.steps:
            break
    vals = sess.run([emb, w, b, global_step])
    sv.stop()
if a.out:
    np.savez(os.path.join(a.out, f"worker{a.task_index}.npz"), emb=vals[0], w=vals[1], b=vals[2], gs=vals[3],
             steps=step)
print(f"worker {a.task_index} done after {step} steps, global step {vals[3]}", flush=True)
