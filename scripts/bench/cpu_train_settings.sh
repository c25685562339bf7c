# The `hetu train --set` overrides that make a cpu_train.sh job the step it times: sequential
# data (the PyTorch scripts read the same windows), metrics every step, no eval and no periodic
# checkpoints (the thread count is the caller's: training.threads). Sourced by cpu_train.sh and
# profile_step.sh, so the profile samples the same step the benchmark times.
cpu_train_sets=(--set data.sampling='"sequential"' --set training.log_every=1 --set training.eval_every=0 --set checkpoint.every=0)
