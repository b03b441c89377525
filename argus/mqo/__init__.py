"""The multi-query optimizer: select-project-join blocks (`blocks`), the computation
index that finds the nodes that already compute part of a new block (`index`), covering
a block with them (`sharing`), and aggregates answered by regrouping finer ones
(`regroup`). It reads the network through small protocols (protocol.Network,
regroup.Groups) and does not depend on how nodes compile or run."""
