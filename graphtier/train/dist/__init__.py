"""Several processes: collectives over ``torch.distributed``, torchrun's rendezvous, the heartbeat, and the
load balancer's workload model. Imports :mod:`graphtier.train.options` only."""
