// Written for lode's tags fixtures in the style of a small C++ geometry
// library (the shape of Skia's SkRect.cpp, BSD-3-Clause); no code is copied.
#include "sample.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using std::size_t;

namespace geom {

namespace {

/* Pi to the precision a double holds. */
constexpr double kPi = 3.14159265358979323846;

}  // namespace

Rect::Rect(Point origin, double width, double height)
    : origin_(origin), width_(width), height_(height) {}

double Rect::area() const {
    return width_ * height_;
}

Rect Rect::square(Point origin, double side) {
    return Rect(origin, side, side);
}

/// A circle given by its centre and radius.
class Circle final : public Shape {
public:
    explicit Circle(Point centre, double radius) : centre_(centre), radius_(radius) {}

    double area() const override { return kPi * radius_ * radius_; }
    std::string name() const override { return "circle"; }

    /// Whether `p` lies inside or on the circle.
    bool contains(const Point& p) const;

    friend bool operator<(const Circle& a, const Circle& b) { return a.radius_ < b.radius_; }

private:
    Point centre_;
    double radius_;
};

bool Circle::contains(const Point& p) const {
    const double dx = p.x - centre_.x;
    const double dy = p.y - centre_.y;
    return std::hypot(dx, dy) <= radius_;
}

double total_area(const ShapeList& shapes) {
    return std::accumulate(shapes.begin(), shapes.end(), 0.0,
                           [](double sum, const ShapePtr& shape) { return sum + shape->area(); });
}

/// The shapes whose area is at least `threshold`, largest first.
template <typename Container, typename Predicate>
std::vector<typename Container::value_type> filter_sorted(const Container& items, Predicate keep) {
    std::vector<typename Container::value_type> out;
    std::copy_if(items.begin(), items.end(), std::back_inserter(out), keep);
    std::sort(out.begin(), out.end());
    return out;
}

/// A fixed-size stack of values, for the scanline pass.
template <typename T, std::size_t N>
class SmallStack {
public:
    using value_type = T;

    void push(const T& value) { items_[size_++] = value; }
    T pop() { return items_[--size_]; }
    bool empty() const noexcept { return size_ == 0; }
    const T& top() const { return items_[size_ - 1]; }
    std::size_t size() const noexcept { return size_; }
    std::size_t capacity() const noexcept { return N; }
    bool full() const noexcept { return size_ == N; }
    void clear() noexcept { size_ = 0; }
    T& operator[](std::size_t index) { return items_[index]; }
    const T* begin() const { return items_; }
    const T* end() const { return items_ + size_; }

private:
    T items_[N];
    std::size_t size_ = 0;
};

namespace detail {

// Counts how many shapes use each stroke.
struct StrokeCounts {
    int solid = 0;
    int dashed = 0;

    StrokeCounts& operator+=(Stroke stroke);
};

StrokeCounts& StrokeCounts::operator+=(Stroke stroke) {
    switch (stroke) {
        case Stroke::Solid: ++solid; break;
        case Stroke::Dashed: ++dashed; break;
        case Stroke::None: break;
    }
    return *this;
}

enum Quadrant { NorthEast, NorthWest, SouthWest, SouthEast };

}  // namespace detail

std::unique_ptr<Shape> make_unit_circle() {
    auto circle = std::make_unique<Circle>(Point{0, 0}, 1.0);
    return circle;
}

}  // namespace geom

int main() {
    geom::ShapeList shapes;
    shapes.push_back(geom::make_unit_circle());
    shapes.emplace_back(new geom::Rect(geom::Rect::square({0, 0}, 2)));
    geom::SmallStack<int, 4> stack;
    stack.push(static_cast<int>(geom::total_area(shapes)));
    return stack.empty() ? 1 : 0;
}
