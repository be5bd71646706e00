// Maximum flow on a directed graph with real capacities (Dinic's algorithm, in double): the
// one max-flow of attnscope, used by the attention flow of core/models/mechanisms.h
// (Abnar & Zuidema, 2020). Checked in tests/core/test_core_mechanisms.cpp against the minimum
// cut found by enumerating every s-t cut of small random graphs.
#pragma once

#include <span>
#include <vector>

namespace attn::model {

// One directed edge from -> to with capacity >= 0.
struct FlowEdge {
  int from = 0, to = 0;
  double capacity = 0;
};

// A graph built once and asked for the maximum flow between many (source, sink) pairs: every
// call starts from the zero flow. Nodes are 0..nodes-1.
class FlowNetwork {
 public:
  explicit FlowNetwork(int nodes);
  // Adds from -> to with `capacity` (>= 0; parallel edges add up). Nodes must be in range.
  void addEdge(int from, int to, double capacity);
  // The value of a maximum flow from `source` to `sink` (0 when source == sink or the sink
  // cannot be reached). Dinic: BFS levels on the residual graph, then blocking flows by DFS
  // with per-node edge pointers; a residual capacity below 1e-15 times the largest capacity
  // counts as saturated, so that float rounding cannot make it loop.
  double maxFlow(int source, int sink);
  int nodes() const { return static_cast<int>(first_.size()); }

 private:
  struct Arc {
    int to = 0;
    int next = -1;  // the next arc out of the same node
    double capacity = 0, flow = 0;
  };
  bool buildLevels(int source, int sink);
  double push(int node, int sink, double limit);

  std::vector<int> first_;   // per node: its first arc (-1: none)
  std::vector<Arc> arcs_;    // arc 2k is an edge, arc 2k+1 its reverse (capacity 0)
  std::vector<int> level_, cursor_;
  double epsilon_ = 0;
};

// The maximum flow of `edges` on `nodes` nodes from source to sink (one FlowNetwork).
double maxFlow(int nodes, std::span<const FlowEdge> edges, int source, int sink);

}  // namespace attn::model
