// Basic types shared by the whole of attnscope's core: matrices, errors and a small
// Expected<T> (C++20 has no std::expected). No UI, no GL.
#pragma once

#include <Eigen/Core>

#include <string>
#include <utility>
#include <variant>

namespace attn {

// All attention math runs in float32, like PyTorch's default, so that a trained layer's
// numbers can be reproduced exactly. Row-major so that `m.data()` is the image layout
// (row 0 first) that glTexSubImage2D and the PNG writer expect.
using Scalar = float;
using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
// A 0/1 (or true/false) matrix, n_q x n_k; true means "this key may be attended".
using BoolMatrix = Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// An error as a value. `file` may be empty (e.g. for an in-memory scenario), `field` names
// the JSON field or option (e.g. "heads", "queries[2][1]"), `problem` says what is wrong.
struct Error {
  std::string file;
  std::string field;
  std::string problem;

  // One line: "FILE: field 'FIELD': PROBLEM" (parts that are empty are left out).
  std::string message() const {
    std::string out;
    if (!file.empty()) out += file + ": ";
    if (!field.empty()) out += "field '" + field + "': ";
    out += problem;
    return out;
  }
};

// Error{"", field, problem}: an error found by core, which names the field; whoever read the
// value from a file fills in `file`.
inline Error fieldError(std::string field, std::string problem) {
  return Error{"", std::move(field), std::move(problem)};
}

// Either a value or an Error. Deliberately tiny: ok(), value(), error().
template <class T>
class Expected {
 public:
  Expected(T value) : data_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Expected(Error error) : data_(std::move(error)) {}     // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<T>(data_); }
  T& value() & { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<Error>(data_); }

 private:
  std::variant<T, Error> data_;
};

// For functions that only succeed or fail.
struct Ok {};
using Status = Expected<Ok>;

}  // namespace attn
