// Written for lode's tags fixtures in the style of a small C++ geometry
// library header (the shape of Skia's SkRect.h, BSD-3-Clause); no code is copied.
#ifndef GEOM_SHAPES_H
#define GEOM_SHAPES_H

#include <memory>
#include <string>
#include <vector>

#define GEOM_VERSION_MAJOR 2
#define GEOM_DEG_TO_RAD(deg) ((deg) * 3.14159265358979323846 / 180.0)

namespace geom {

/// A point in the plane.
struct Point {
    double x = 0;
    double y = 0;

    Point operator+(const Point& other) const { return {x + other.x, y + other.y}; }
    bool operator==(const Point& other) const = default;
};

/// How a shape's outline is drawn.
enum class Stroke { Solid, Dashed, None };

/// Every shape can report its area and draw itself.
class Shape {
public:
    virtual ~Shape() = default;

    /// The area enclosed by the outline.
    virtual double area() const = 0;
    virtual std::string name() const = 0;

    Stroke stroke() const { return stroke_; }

protected:
    Stroke stroke_ = Stroke::Solid;
};

/// An axis-aligned rectangle.
class Rect : public Shape {
public:
    Rect(Point origin, double width, double height);

    double area() const override;
    std::string name() const override { return "rect"; }

    static Rect square(Point origin, double side);

private:
    Point origin_;
    double width_;
    double height_;
};

using ShapePtr = std::unique_ptr<Shape>;
typedef std::vector<ShapePtr> ShapeList;

double total_area(const ShapeList& shapes);

}  // namespace geom

#endif  // GEOM_SHAPES_H
