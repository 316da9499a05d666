//! Axis scales a reader can read: linear or logarithmic (chosen when the values span more than a
//! decade and a bit), ticks at round values (1, 2, 5 times a power of ten), and numbers written
//! as integers or with an SI suffix (`250`, `2.5k`, `10k`, `1M`), never `10000.0`.

/// Values spanning this factor or more get a logarithmic axis.
pub const LOG_SPAN: f64 = 20.0;

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Evenly spaced values, from zero.
    Linear,
    /// Evenly spaced powers of ten.
    Log,
}

/// The scale for `values`: logarithmic when the positive ones span [`LOG_SPAN`] or more.
pub fn scale_for(values: &[f64]) -> Scale {
    let (lo, hi) = positive_bounds(values);
    if lo > 0.0 && hi / lo >= LOG_SPAN {
        Scale::Log
    } else {
        Scale::Linear
    }
}

/// The smallest and largest finite positive values (0, 0 when there are none).
fn positive_bounds(values: &[f64]) -> (f64, f64) {
    let positive = values.iter().copied().filter(|v| v.is_finite() && *v > 0.0);
    let lo = positive.clone().fold(f64::INFINITY, f64::min);
    let hi = positive.fold(0.0, f64::max);
    if lo.is_finite() { (lo, hi) } else { (0.0, 0.0) }
}

/// An axis laid out: the shown range and the tick values, both in the axis's own units
/// (log10 of the value on a logarithmic axis).
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// The scale.
    pub scale: Scale,
    /// Shown range, low end.
    pub lo: f64,
    /// Shown range, high end.
    pub hi: f64,
    /// Where ticks go.
    pub ticks: Vec<f64>,
}

impl Layout {
    /// Where `value` goes on the axis (its log10 on a logarithmic one).
    pub fn position(&self, value: f64) -> f64 {
        match self.scale {
            Scale::Linear => value,
            Scale::Log => value.max(f64::MIN_POSITIVE).log10(),
        }
    }

    /// The value at axis position `at`.
    pub fn value(&self, at: f64) -> f64 {
        match self.scale {
            Scale::Linear => at,
            Scale::Log => 10f64.powf(at),
        }
    }
}

/// Lays out an axis for `values` on `scale`, with some room beyond the extremes.
pub fn layout(values: &[f64], scale: Scale) -> Layout {
    match scale {
        Scale::Linear => linear(values),
        Scale::Log => log(values),
    }
}

fn linear(values: &[f64]) -> Layout {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let lo = finite.iter().copied().fold(0.0, f64::min);
    let hi = finite.iter().copied().fold(0.0, f64::max);
    let hi = if hi > lo { hi } else { lo + 1.0 };
    let step = nice_step((hi - lo) / 5.0);
    let lo = (lo / step).floor() * step;
    // Room above the highest point for its label.
    let top = ((hi * 1.08) / step).ceil() * step;
    let count = ((top - lo) / step).round() as usize;
    let ticks = (0..=count).map(|i| lo + step * i as f64).collect();
    Layout {
        scale: Scale::Linear,
        lo,
        hi: top,
        ticks,
    }
}

/// The round step (1, 2, 2.5 or 5 times a power of ten) nearest above `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= raw * 0.999)
        .unwrap_or(10.0 * magnitude)
}

fn log(values: &[f64]) -> Layout {
    let (lo, hi) = positive_bounds(values);
    let (lo, hi) = if lo > 0.0 { (lo, hi) } else { (1.0, 10.0) };
    let (vlo, vhi) = (lo.log10(), hi.log10());
    let decades = vhi - vlo + 0.4;
    let mantissas: &[f64] = if decades > 4.0 {
        &[1.0]
    } else if decades > 1.6 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0, 1.5, 2.0, 3.0, 5.0, 7.0]
    };
    let candidates: Vec<f64> = ((vlo.floor() as i32 - 1)..=(vhi.ceil() as i32 + 1))
        .flat_map(|power| {
            mantissas
                .iter()
                .map(move |m| (m * 10f64.powi(power)).log10())
        })
        .collect();
    // A fifth of a decade of room either side, and at least one tick beyond each extreme, so
    // every value lies between two labelled ticks.
    let below = candidates
        .iter()
        .copied()
        .filter(|t| *t <= vlo + 1e-9)
        .fold(f64::NEG_INFINITY, f64::max);
    let above = candidates
        .iter()
        .copied()
        .filter(|t| *t >= vhi - 1e-9)
        .fold(f64::INFINITY, f64::min);
    let lo = (vlo - 0.2).min(below);
    let hi = (vhi + 0.2).max(above);
    let ticks = candidates
        .into_iter()
        .filter(|t| *t >= lo - 1e-9 && *t <= hi + 1e-9)
        .collect();
    Layout {
        scale: Scale::Log,
        lo,
        hi,
        ticks,
    }
}

/// `value` with at most `significant` digits and an SI suffix from a thousand up: `0.295`,
/// `33.6`, `250`, `5.32k`, `10k`, `1M`. Integers stay integers.
pub fn si(value: f64, significant: usize) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    let value = round_to_significant(value, significant);
    let (scaled, suffix) = match value.abs() {
        a if a >= 1e9 => (value / 1e9, "G"),
        a if a >= 1e6 => (value / 1e6, "M"),
        a if a >= 1e3 => (value / 1e3, "k"),
        _ => (value, ""),
    };
    // Digits before the point; zero or less below 1 (0.0295 has -1).
    let magnitude = if scaled == 0.0 {
        1
    } else {
        scaled.abs().log10().floor() as i32 + 1
    };
    let decimals = (significant as i32 - magnitude).clamp(0, 6) as usize;
    let text = format!("{scaled:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}{suffix}")
}

/// `value` rounded to `significant` digits (999.6 to 3 digits is 1000).
fn round_to_significant(value: f64, significant: usize) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let magnitude = value.abs().log10().floor() as i32 + 1;
    let factor = 10f64.powi(significant as i32 - magnitude);
    (value * factor).round() / factor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_integers_or_carry_an_si_suffix() {
        assert_eq!(si(10_000.0, 3), "10k");
        assert_eq!(si(1_000_000.0, 3), "1M");
        assert_eq!(si(250.0, 3), "250");
        assert_eq!(si(5315.79, 3), "5.32k");
        assert_eq!(si(24_633.8, 3), "24.6k");
        assert_eq!(si(0.2946, 3), "0.295");
        assert_eq!(si(33.597, 3), "33.6");
        assert_eq!(si(2.0, 3), "2");
        assert_eq!(si(0.0, 3), "0");
        assert_eq!(si(1500.0, 3), "1.5k");
        assert_eq!(si(0.0295, 3), "0.0295");
        assert_eq!(si(999.6, 3), "1k");
    }

    #[test]
    fn values_spanning_decades_get_a_log_axis() {
        assert_eq!(scale_for(&[10_000.0, 100_000.0, 1e6]), Scale::Log);
        assert_eq!(scale_for(&[2053.0, 56_330.0]), Scale::Log);
        assert_eq!(scale_for(&[9198.0, 24_633.0]), Scale::Linear);
        assert_eq!(scale_for(&[]), Scale::Linear);
    }

    #[test]
    fn every_value_of_a_log_axis_lies_between_two_labelled_ticks() {
        let values = [2053.7, 2404.4, 5315.8, 54_131.0, 56_330.2];
        let axis = layout(&values, Scale::Log);
        for v in values {
            let at = axis.position(v);
            assert!(axis.ticks.iter().any(|t| *t <= at), "{v}: {:?}", axis.ticks);
            assert!(axis.ticks.iter().any(|t| *t >= at), "{v}: {:?}", axis.ticks);
        }
        let labels: Vec<String> = axis.ticks.iter().map(|t| si(axis.value(*t), 3)).collect();
        assert_eq!(labels, ["2k", "5k", "10k", "20k", "50k", "100k"]);
        let wide = layout(&[2.575, 61.5, 5169.0, 15_974.0], Scale::Log);
        let labels: Vec<String> = wide.ticks.iter().map(|t| si(wide.value(*t), 3)).collect();
        assert_eq!(labels, ["1", "10", "100", "1k", "10k", "100k"]);
    }

    #[test]
    fn a_linear_axis_starts_at_zero_with_round_ticks() {
        let axis = layout(&[9198.0, 24_633.0, 49_993.0], Scale::Linear);
        assert_eq!(axis.lo, 0.0);
        let labels: Vec<String> = axis.ticks.iter().map(|t| si(*t, 3)).collect();
        assert_eq!(labels, ["0", "10k", "20k", "30k", "40k", "50k", "60k"]);
    }
}
