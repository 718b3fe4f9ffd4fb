"""Where everything lives in the flat arrays of the virtual-tree walk kernel.

:mod:`sim.dataplanes.virtual_tree.walk_kernel` reads a few flat integer arrays
(and two float ones): ``tp`` / ``td`` the topology's links
(:class:`~sim.dataplanes.virtual_tree.walk_tables.WalkTopology`), ``tb`` the
installed tables (:class:`~sim.dataplanes.virtual_tree.walk_tables.WalkTables`),
``bt`` the batch and ``sc`` / ``sf`` the scratch
(:mod:`sim.dataplanes.virtual_tree.walk_batch`), ``lay`` where each region
starts. The constants below name the regions, the fields of a record and its
width; the modules that write the arrays and the kernel that reads them share
them.

References
----------
Seed 000 §5.2.6 (Listings 5.1-5.5: the tables); digest ch. 5-7 §1.2-1.5.4.
"""

from __future__ import annotations

#: ``lay``: sizes, then where each region starts in its array: ``tp`` (ports per node:
#: first link and count; per link: neighbour, its port, directed node pair; per pair:
#: its two ends), ``bt`` (notifications, receivers, packets, labels in stack order,
#: labels ascending and their positions), ``sc`` (see :data:`NODE_REGIONS` ...), ``sf``
#: (first arrival per node, queue times). ``L_DENSE_N``: labels below it are found through
#: the direct-address region ``L_DENSE`` (one entry per label value, zero between
#: notifications: 1 + the label's first entry in ``L_ENTRIES``, whose entries are (packet's
#: first label, position, next entry + 1)); 0: by binary search in the ascending labels.
(L_NODES, L_SWITCHES, L_PAIRS, L_LIMIT, L_LBYTES,
 L_PORT_BASE, L_PORT_N, L_LINK_NB, L_LINK_NBPORT, L_LINK_PAIR, L_PAIR_SRC, L_PAIR_DST,
 L_NOTES, L_RC, L_PACKETS, L_LAB, L_SLAB, L_SPOS,
 L_NODE, L_PAIR, L_BFS, L_STACK, L_STACK_M, L_CL, L_CL_N, L_RES, L_Q, L_Q_N, L_CH, L_CH_N,
 L_FIRST, L_QT, L_DENSE, L_DENSE_N, L_ENTRIES) = range(35)
LAYOUT_W = 35
#: A piece of ``tb`` (one switch configuration, :data:`PIECE_W` entries): where its
#: ``check_hop`` and ``check_tree`` answers start and how many (an answer block of ``n``
#: keys holds the keys ascending, then their kinds, first and end ``outs`` index, whether
#: the Python walk declines on them; the ``outs`` follow), its ``check_stop`` entries
#: (``n`` clone ports ascending, then the ``n`` labels), its clone sessions (egress port
#: per session id ``0..bitmask_bits``, -1: none) and whether a table is not all exact.
P_HOP, P_HOP_N, P_TREE, P_TREE_N, P_STOP, P_STOP_N, P_SESS, P_BAD = range(8)
PIECE_W = 8
#: Answer kinds: a hop label (``outs``: its port), a tree label's port mask (``outs``: what
#: ``extract_port`` answers pass after pass) or a tree label's multicast group (its ports).
ACT_HOP, ACT_PORTS, ACT_GROUP = 0, 1, 2
#: A notification in ``bt`` (:data:`NOTE_W` entries): publisher node, where its state's
#: row of pieces starts in ``tb`` (one per switch), its packets and its receivers.
N_PUB, N_ROW, N_PK_LO, N_PK_HI, N_RC_LO, N_RC_HI = range(6)
NOTE_W = 6
#: A packet in ``bt`` (:data:`PACKET_W` entries): where its labels start in the label
#: regions, how many, frame bytes without the labels, frame bytes.
K_LO, K_N, K_REST, K_FRAME = range(4)
PACKET_W = 4
#: ``out_i`` per notification (:data:`OUT_W` entries); ``out_t`` its worst first arrival (s).
(O_STATUS, O_DELIVERED, O_FP, O_FN, O_DUP, O_FRAMES, O_BYTES, O_PASSES, O_RECIRC, O_LOOKUPS,
 O_MAX_PASSES, O_WASTE) = range(12)
OUT_W = 12
#: ``O_STATUS``: counted, or declined (the reference must run).
DONE, DECLINED = 0, 1
#: Node regions of ``sc`` (one node long each): passes per switch, visited switches,
#: copies per host, reached hosts, receiver marks, useful marks, useful nodes, first
#: used link into the node (link + 1; the pair regions chain the others). Those of
#: :data:`NODE_ZERO` are zero between notifications, the others are lists.
(NODE_PASSES, NODE_VISITED, NODE_COPIES, NODE_REACHED, NODE_RECEIVER, NODE_USEFUL,
 NODE_USEFUL_LIST, NODE_INTO) = range(8)
NODE_REGIONS = 8
NODE_ZERO = (NODE_PASSES, NODE_COPIES, NODE_RECEIVER, NODE_USEFUL, NODE_INTO)
#: Pair regions of ``sc`` (one directed link long each): frames (zero between
#: notifications), links in order of first use, the next used link into the same node
#: (link + 1, 0 ends).
PAIR_FRAMES, PAIR_USED, PAIR_NEXT = range(3)
PAIR_REGIONS = 3
#: Stack regions of ``sc`` (``lay[L_STACK_M]`` = the longest stack + 2 long each): the
#: copy's removed positions (ascending), their marks (zero between visits), active
#: positions, their answers, hops consumed in this visit, chain ends of emitted copies.
S_REMOVED, S_MARK, S_ACT_Q, S_ACT_E, S_CONSUMED, S_HEADS = range(6)
STACK_REGIONS = 6
#: Entry widths: a queued copy (switch, in port, packet, chain), a chain link
#: (position, previous link), a clone (pass that made it, then depth; port; hops
#: consumed; first label it scans). The clone region is followed by its served ports.
Q_W, CH_W, CL_W = 4, 2, 4
#: ``res`` region of ``sc``: a visit's passes, lookups, emitted copies and removed
#: labels; the notification's links used and hosts reached.
R_PASSES, R_LOOKUPS, R_EMITTED, R_REMOVED, R_USED, R_REACHED = range(6)
RES_W = 6
