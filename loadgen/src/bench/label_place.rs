//! Where a chart's value labels and legend go: each label tries spots around its point and
//! takes the first that stays inside the plotting area and covers no marker, line or label
//! already placed; the legend takes the corner with the least drawn in it.

/// A pixel rectangle, `x0 <= x1`, `y0 <= y1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    /// Left.
    pub x0: i32,
    /// Top.
    pub y0: i32,
    /// Right.
    pub x1: i32,
    /// Bottom.
    pub y1: i32,
}

impl Rect {
    /// The rectangle between two corners.
    pub fn new(x0: i32, y0: i32, x1: i32, y1: i32) -> Self {
        Self { x0, y0, x1, y1 }
    }

    /// The square of half-side `r` around `p`.
    pub fn around(p: (i32, i32), r: i32) -> Self {
        Self::new(p.0 - r, p.1 - r, p.0 + r, p.1 + r)
    }

    fn at(p: (i32, i32), size: (i32, i32)) -> Self {
        Self::new(p.0, p.1, p.0 + size.0, p.1 + size.1)
    }

    fn overlaps(&self, other: &Rect) -> bool {
        self.x0 < other.x1 && other.x0 < self.x1 && self.y0 < other.y1 && other.y0 < self.y1
    }

    fn inside(&self, outer: &Rect) -> bool {
        self.x0 >= outer.x0 && self.y0 >= outer.y0 && self.x1 <= outer.x1 && self.y1 <= outer.y1
    }
}

/// What is drawn so far, and where the next thing may go.
#[derive(Debug, Clone)]
pub struct Placer {
    area: Rect,
    taken: Vec<Rect>,
    /// Points sampled along the lines: a label may cross a line if it must, a legend should not.
    line_samples: Vec<(i32, i32)>,
}

impl Placer {
    /// Nothing placed yet inside `area`.
    pub fn new(area: Rect) -> Self {
        Self {
            area,
            taken: Vec::new(),
            line_samples: Vec::new(),
        }
    }

    /// Marks `rect` as drawn on.
    pub fn take(&mut self, rect: Rect) {
        self.taken.push(rect);
    }

    /// Notes a line from `a` to `b`.
    pub fn note_line(&mut self, a: (i32, i32), b: (i32, i32)) {
        let steps = ((b.0 - a.0).abs().max((b.1 - a.1).abs()) / 6).max(1);
        for i in 0..=steps {
            self.line_samples
                .push((a.0 + (b.0 - a.0) * i / steps, a.1 + (b.1 - a.1) * i / steps));
        }
    }

    fn crossings(&self, rect: &Rect) -> usize {
        self.line_samples
            .iter()
            .filter(|p| rect.overlaps(&Rect::around(**p, 1)))
            .count()
    }

    fn free(&self, rect: &Rect) -> bool {
        rect.inside(&self.area) && !self.taken.iter().any(|t| t.overlaps(rect))
    }

    /// The spot for a label of `size` at point `p`: beside it, above or below, then further
    /// out; among free spots the one crossing the fewest lines. Taken once chosen.
    pub fn place(&mut self, p: (i32, i32), size: (i32, i32)) -> Rect {
        let (w, h) = size;
        let offsets = [
            (9, -h - 3),
            (9, 3),
            (-w - 9, -h - 3),
            (-w - 9, 3),
            (-w / 2, -h - 10),
            (-w / 2, 10),
            (9, -2 * h - 6),
            (9, h + 6),
            (-w - 9, -2 * h - 6),
            (-w - 9, h + 6),
            (-w / 2, -2 * h - 14),
            (-w / 2, h + 14),
        ];
        let spots: Vec<Rect> = offsets
            .iter()
            .map(|(dx, dy)| Rect::at((p.0 + dx, p.1 + dy), size))
            .collect();
        let chosen = spots
            .iter()
            .filter(|r| self.free(r))
            .min_by_key(|r| self.crossings(r))
            .copied()
            .unwrap_or_else(|| self.clamped(spots[0]));
        self.take(chosen);
        chosen
    }

    fn clamped(&self, r: Rect) -> Rect {
        let (w, h) = (r.x1 - r.x0, r.y1 - r.y0);
        let x0 =
            r.x0.clamp(self.area.x0, (self.area.x1 - w).max(self.area.x0));
        let y0 =
            r.y0.clamp(self.area.y0, (self.area.y1 - h).max(self.area.y0));
        Rect::at((x0, y0), (w, h))
    }

    /// The corner of the area (10 px in) for a box of `size` with the least drawn in it; taken.
    pub fn corner(&mut self, size: (i32, i32)) -> Rect {
        let (w, h) = size;
        let a = self.area;
        let corners = [
            Rect::at((a.x0 + 10, a.y0 + 10), size),
            Rect::at((a.x1 - 10 - w, a.y0 + 10), size),
            Rect::at((a.x1 - 10 - w, a.y1 - 10 - h), size),
            Rect::at((a.x0 + 10, a.y1 - 10 - h), size),
        ];
        let cost = |r: &Rect| {
            self.taken.iter().filter(|t| t.overlaps(r)).count() * 100 + self.crossings(r)
        };
        let chosen = corners
            .iter()
            .min_by_key(|r| cost(r))
            .copied()
            .unwrap_or(corners[0]);
        self.take(chosen);
        chosen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_never_covers_another_when_there_is_room() {
        let mut placer = Placer::new(Rect::new(0, 0, 400, 300));
        let p = (200, 150);
        placer.take(Rect::around(p, 7));
        let first = placer.place(p, (40, 14));
        let second = placer.place(p, (40, 14));
        let third = placer.place(p, (40, 14));
        assert!(!first.overlaps(&second) && !first.overlaps(&third) && !second.overlaps(&third));
        assert!(!first.overlaps(&Rect::around(p, 7)));
    }

    #[test]
    fn a_label_stays_inside_the_plotting_area() {
        let mut placer = Placer::new(Rect::new(0, 0, 100, 100));
        let label = placer.place((98, 2), (40, 14));
        assert!(label.inside(&Rect::new(0, 0, 100, 100)), "{label:?}");
    }

    #[test]
    fn the_legend_takes_the_emptiest_corner() {
        let mut placer = Placer::new(Rect::new(0, 0, 400, 300));
        placer.note_line((0, 30), (400, 30));
        placer.take(Rect::around((380, 290), 7));
        let legend = placer.corner((100, 50));
        assert_eq!((legend.x0, legend.y1), (10, 290), "bottom left: {legend:?}");
    }
}
