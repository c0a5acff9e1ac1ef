"""Where a workload can run: nodes' free capacity, the kube-scheduler's filters, and a gang-aware
fit with a placement plan. Pure computation on plain values: no HTTP, no cluster I/O (the callers
feed it from watched Nodes and Pods and from interpretations).

- `nodes`: a compact view of a Node, its usage by bound pods, its free capacity;
- `filters`: the scheduler's node filters (resources, taints, cordon, readiness, selectors);
- `plan`: pod groups (components, gangs) packed onto the free capacity;
- `workload`: an interpretation's pods as those pod groups;
- `pools`: the default node pool labels;
- `answers`: capacity and fit as every interface answers them.
"""
