// Dinic's maximum flow (see max_flow.h).
#include "core/models/max_flow.h"

#include <algorithm>
#include <limits>
#include <queue>

namespace attn::model {

FlowNetwork::FlowNetwork(int nodes) : first_(static_cast<std::size_t>(std::max(nodes, 0)), -1) {}

void FlowNetwork::addEdge(int from, int to, double capacity) {
  const int index = static_cast<int>(arcs_.size());
  arcs_.push_back({to, first_[static_cast<std::size_t>(from)], capacity, 0});
  first_[static_cast<std::size_t>(from)] = index;
  arcs_.push_back({from, first_[static_cast<std::size_t>(to)], 0, 0});
  first_[static_cast<std::size_t>(to)] = index + 1;
  epsilon_ = std::max(epsilon_, capacity * 1e-15);
}

// Levels (BFS distance from the source over arcs with residual capacity); true when the sink
// is reached.
bool FlowNetwork::buildLevels(int source, int sink) {
  std::fill(level_.begin(), level_.end(), -1);
  std::queue<int> queue;
  level_[static_cast<std::size_t>(source)] = 0;
  queue.push(source);
  while (!queue.empty()) {
    const int node = queue.front();
    queue.pop();
    for (int a = first_[static_cast<std::size_t>(node)]; a >= 0; a = arcs_[static_cast<std::size_t>(a)].next) {
      const Arc& arc = arcs_[static_cast<std::size_t>(a)];
      if (level_[static_cast<std::size_t>(arc.to)] < 0 && arc.capacity - arc.flow > epsilon_) {
        level_[static_cast<std::size_t>(arc.to)] = level_[static_cast<std::size_t>(node)] + 1;
        queue.push(arc.to);
      }
    }
  }
  return level_[static_cast<std::size_t>(sink)] >= 0;
}

// Pushes at most `limit` from `node` towards the sink along arcs that go one level up;
// returns what was pushed. The depth is at most the number of levels (the attention graph:
// L + 1), so the recursion stays shallow.
double FlowNetwork::push(int node, int sink, double limit) {
  if (node == sink) return limit;
  for (int& a = cursor_[static_cast<std::size_t>(node)]; a >= 0; a = arcs_[static_cast<std::size_t>(a)].next) {
    Arc& arc = arcs_[static_cast<std::size_t>(a)];
    const double residual = arc.capacity - arc.flow;
    if (residual <= epsilon_ || level_[static_cast<std::size_t>(arc.to)] != level_[static_cast<std::size_t>(node)] + 1)
      continue;
    const double pushed = push(arc.to, sink, std::min(limit, residual));
    if (pushed > 0) {
      arc.flow += pushed;
      arcs_[static_cast<std::size_t>(a ^ 1)].flow -= pushed;
      return pushed;
    }
  }
  return 0;
}

double FlowNetwork::maxFlow(int source, int sink) {
  for (Arc& arc : arcs_) arc.flow = 0;
  if (source == sink) return 0;
  level_.assign(first_.size(), -1);
  double total = 0;
  // 1 levels, 2 blocking flow (augmenting paths along the levels until none is left), repeat
  while (buildLevels(source, sink)) {
    cursor_ = first_;
    for (double pushed; (pushed = push(source, sink, std::numeric_limits<double>::infinity())) > 0;)
      total += pushed;
  }
  return total;
}

double maxFlow(int nodes, std::span<const FlowEdge> edges, int source, int sink) {
  FlowNetwork network(nodes);
  for (const FlowEdge& e : edges) network.addEdge(e.from, e.to, e.capacity);
  return network.maxFlow(source, sink);
}

}  // namespace attn::model
