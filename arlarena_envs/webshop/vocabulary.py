"""Word lists the generated catalogue is built from.

Holds the five shop categories (:data:`CATEGORIES`), each with its mined-style attributes,
breadcrumb root, claims for bullets and descriptions, and its product types
(:class:`ProductType`: the search query a product was "scraped for", title nouns, breadcrumb,
title descriptors, the option kinds it may carry and its price range), the option value pools
(:data:`OPTION_POOLS`), and the words reviews and brand names are made of. Everything is a tuple
so that iteration order, and therefore the generated catalogue, never depends on hashing.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BRAND_SUFFIXES",
    "BRAND_SYLLABLES",
    "CATEGORIES",
    "OPTION_POOLS",
    "REVIEW_BODIES",
    "REVIEW_TITLES",
    "Category",
    "ProductType",
]


@dataclass(frozen=True)
class ProductType:
    """One kind of product: what shoppers search for and how its listings look.

    Attributes:
        query: the lower-case search query the product was listed under (WebShop's ``query``).
        nouns: title head phrases (Title Case); every title of this type uses one of them.
        crumbs: breadcrumb levels below the category root.
        descriptors: words that may precede the head noun in a title.
        phrases: "for …" / "with …" phrases that may follow it.
        options: option kinds as ``(option name, pool name)`` in listing order.
        price: the low and high end of the list price, in dollars.
    """

    query: str
    nouns: tuple[str, ...]
    crumbs: tuple[str, ...]
    descriptors: tuple[str, ...]
    phrases: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    price: tuple[float, float]


@dataclass(frozen=True)
class Category:
    """A broad shop category (WebShop's ``category``) and what its listings share."""

    name: str
    root: str
    attributes: tuple[str, ...]
    claims: tuple[str, ...]
    types: tuple[ProductType, ...]


_SIZE = ("size", "size_clothing")
_COLOR = ("color", "color")

OPTION_POOLS: dict[str, tuple[str, ...]] = {
    "size_clothing": ("x-small", "small", "medium", "large", "x-large", "xx-large", "3x-large"),
    "size_shoe": ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12"),
    "size_volume": (
        "1 fl oz", "1.7 fl oz", "3.4 fl oz", "6.76 fl oz", "8 fl oz", "12 fl oz", "16.9 fl oz",
        "33.8 fl oz",
    ),
    "size_weight": (
        "2 ounce", "4 ounce", "8 ounce", "12 ounce", "16 ounce", "1.5 pound", "2 pound", "5 pound",
    ),
    "size_furniture": ("24 inch", "30 inch", "36 inch", "40 inch", "48 inch", "60 inch", "72 inch"),
    "size_stool": ("24 inch", "26 inch", "29 inch", "30 inch", "32 inch"),
    "size_bed": ("twin", "twin xl", "full", "queen", "king", "california king"),
    "size_screen": ("32 inch", "43 inch", "50 inch", "55 inch", "65 inch", "75 inch"),
    "size_cable": ("3 feet", "6 feet", "10 feet", "15 feet", "25 feet", "50 feet"),
    "size_rug": ("2x3", "3x5", "4x6", "5x7", "6x9", "8x10", "9x12"),
    "color": (
        "black", "white", "navy blue", "light blue", "royal blue", "red", "burgundy", "pink",
        "hot pink", "purple", "lavender", "green", "olive green", "mint green", "yellow", "mustard",
        "orange", "coral", "brown", "khaki", "beige", "ivory", "grey", "light grey",
        "charcoal", "silver", "gold", "rose gold", "black | white", "grey | blue", "multicolor",
    ),
    "color_wood": (
        "natural", "walnut", "espresso", "rustic brown", "white oak", "black", "white", "grey",
        "cherry", "black | walnut",
    ),
    "color_makeup": (
        "ruby red", "nude", "berry", "coral", "mauve", "plum", "rose", "classic red", "pink",
        "peach", "wine", "cherry",
    ),
    "scent": (
        "lavender", "unscented", "coconut", "vanilla", "eucalyptus", "citrus", "rose", "sandalwood",
        "fresh linen", "ocean breeze", "tea tree", "peppermint",
    ),
    "flavor": (
        "vanilla", "chocolate", "strawberry", "sea salt caramel", "original", "honey", "cinnamon",
        "mango", "peanut butter", "matcha", "mixed berry", "lemon",
    ),
    "flavor_coffee": (
        "medium roast", "dark roast", "light roast", "french vanilla", "hazelnut", "colombian",
        "breakfast blend", "decaf",
    ),
    "flavor_tea": ("jasmine", "mint", "lemon ginger", "honey", "original", "peach", "chai"),
    "flavor_jerky": ("original", "teriyaki", "peppered", "sweet and spicy", "hickory smoked"),
    "flavor_water": ("lime", "lemon", "grapefruit", "black cherry", "raspberry", "unflavored"),
    "flavor_snack": (
        "sea salt", "butter", "white cheddar", "caramel", "kettle corn", "spicy", "original",
    ),
    "pack": ("1 count", "pack of 2", "pack of 3", "pack of 4", "pack of 6", "12 count", "24 count"),
    "set": ("set of 1", "set of 2", "set of 4", "set of 6"),
    "capacity": ("32gb", "64gb", "128gb", "256gb", "512gb", "1tb"),
    "battery": ("5000mah", "10000mah", "20000mah", "26800mah", "30000mah"),
    "style_electronics": ("standard", "pro", "with case", "bundle", "lite"),
    "style_device": ("ipad 10.2", "ipad air", "ipad pro 11", "galaxy tab s8", "fire hd 10"),
    "style_furniture": (
        "modern", "mid century", "farmhouse", "industrial", "scandinavian", "classic",
    ),
    "style_hair": ("standard", "with diffuser", "travel", "professional"),
    "material": ("solid wood", "metal", "velvet", "linen", "leather", "bamboo", "faux leather"),
    "pattern": ("solid", "striped", "plaid", "floral", "geometric", "polka dot"),
}
"""Option value pools (already lower-case, "/" already written " | " as WebShop does)."""

_PACK = ("item package quantity", "pack")

_BEAUTY = Category(
    name="beauty",
    root="Beauty & Personal Care",
    attributes=(
        "long lasting", "cruelty free", "paraben free", "sulfate free", "easy to use",
        "travel size", "natural ingredients", "dermatologist tested", "fragrance free", "vegan",
        "hyaluronic acid", "sensitive skin", "dry skin", "high quality", "alcohol free",
        "oil free", "non toxic",
    ),
    claims=(
        "gentle enough for everyday use",
        "made with carefully selected ingredients",
        "leaves you feeling fresh and confident",
        "suitable for all skin and hair types",
        "developed with beauty professionals",
        "packaged in a recyclable container",
        "a salon quality result at home",
        "free from harsh chemicals",
    ),
    types=(
        ProductType(
            "shampoo", ("Shampoo", "Hair Shampoo"),
            ("Hair Care", "Shampoo & Conditioner", "Shampoos"),
            ("Moisturizing", "Clarifying", "Volumizing", "Repairing", "Daily"),
            ("for Dry Hair", "for Curly Hair", "with Argan Oil", "with Biotin",
             "for Color Treated Hair"),
            (("size", "size_volume"), ("scent", "scent"), _PACK), (5.0, 45.0),
        ),
        ProductType(
            "conditioner", ("Conditioner", "Hair Conditioner"),
            ("Hair Care", "Shampoo & Conditioner", "Conditioners"),
            ("Deep", "Leave In", "Smoothing", "Hydrating"),
            ("for Damaged Hair", "with Coconut Oil", "for Frizzy Hair", "with Keratin"),
            (("size", "size_volume"), ("scent", "scent"), _PACK), (5.0, 40.0),
        ),
        ProductType(
            "face moisturizer", ("Face Moisturizer", "Face Cream"),
            ("Skin Care", "Face", "Creams & Moisturizers"),
            ("Daily", "Hydrating", "Night", "Lightweight", "Firming"),
            ("with SPF 30", "with Vitamin C", "for Combination Skin", "with Retinol"),
            (("size", "size_volume"), _PACK), (8.0, 80.0),
        ),
        ProductType(
            "lipstick", ("Lipstick", "Matte Lipstick", "Lip Color"),
            ("Makeup", "Lips", "Lipstick"),
            ("Creamy", "Velvet", "Satin", "Waterproof"),
            ("with Shea Butter", "for Women", "with Vitamin E"),
            (("color", "color_makeup"), _PACK), (4.0, 35.0),
        ),
        ProductType(
            "nail polish", ("Nail Polish", "Gel Nail Polish"),
            ("Foot, Hand & Nail Care", "Nail Art & Polish", "Nail Polish"),
            ("Quick Dry", "Glossy", "Chip Resistant", "Gel"),
            ("for Manicure", "with Top Coat", "Salon Kit"),
            (_COLOR, _PACK), (3.0, 30.0),
        ),
        ProductType(
            "perfume", ("Eau de Parfum Spray", "Perfume", "Eau de Toilette"),
            ("Fragrance", "Women's", "Eau de Parfum"),
            ("Floral", "Fresh", "Warm", "Signature"),
            ("for Women", "for Men", "Gift Set"),
            (("size", "size_volume"), ("scent", "scent")), (18.0, 160.0),
        ),
        ProductType(
            "hair dryer", ("Hair Dryer", "Blow Dryer"),
            ("Hair Care", "Styling Tools & Appliances", "Hair Dryers"),
            ("Ionic", "Ceramic", "Compact", "Powerful"),
            ("with Diffuser", "with Concentrator Nozzle", "for Fast Drying"),
            (_COLOR, ("style", "style_hair")), (18.0, 220.0),
        ),
        ProductType(
            "body wash", ("Body Wash", "Shower Gel"),
            ("Personal Care", "Bath & Bathing Accessories", "Body Washes"),
            ("Nourishing", "Refreshing", "Foaming", "Creamy"),
            ("for Men", "for Women", "with Shea Butter", "with Essential Oils"),
            (("scent", "scent"), ("size", "size_volume"), _PACK), (4.0, 30.0),
        ),
        ProductType(
            "makeup brush set", ("Makeup Brush Set", "Makeup Brushes"),
            ("Tools & Accessories", "Makeup Brushes & Tools", "Brush Sets"),
            ("Professional", "Premium", "Synthetic", "Soft"),
            ("with Case", "for Foundation and Powder", "with Sponge"),
            (_COLOR, _PACK), (6.0, 45.0),
        ),
        ProductType(
            "sunscreen", ("Sunscreen Lotion", "Sunscreen", "Sunblock"),
            ("Skin Care", "Sunscreens & Tanning Products", "Sunscreens"),
            ("Broad Spectrum", "Mineral", "Sport", "Sheer"),
            ("SPF 50", "SPF 30", "for Face and Body", "for Kids"),
            (("size", "size_volume"), _PACK), (6.0, 40.0),
        ),
    ),
)

_ELECTRONICS = Category(
    name="electronics",
    root="Electronics",
    attributes=(
        "fast charging", "high definition", "noise cancelling", "wireless bluetooth",
        "easy install", "usb port", "long battery life", "water resistant", "plug and play",
        "high speed", "hands free", "quad core", "easy to carry", "aluminum alloy",
        "4k ultra hd", "dual band", "touch screen",
    ),
    claims=(
        "works with most phones, tablets and laptops",
        "backed by a one year warranty",
        "tested for reliable everyday performance",
        "compact enough to take anywhere",
        "simple setup in minutes",
        "built with premium components",
        "energy efficient design",
        "trusted by thousands of customers",
    ),
    types=(
        ProductType(
            "wireless earbuds", ("Wireless Earbuds", "Bluetooth Earbuds", "Earphones"),
            ("Headphones, Earbuds & Accessories", "Earbuds"),
            ("True", "Sport", "Mini", "Premium"),
            ("with Charging Case", "with Microphone", "for Running"),
            (_COLOR, ("style", "style_electronics")), (12.0, 180.0),
        ),
        ProductType(
            "usb c charger", ("USB C Charger", "Wall Charger", "Charger Block"),
            ("Accessories & Supplies", "Chargers & Power Adapters"),
            ("Dual Port", "Compact", "Foldable", "GaN"),
            ("for iPhone", "for Samsung Galaxy", "with Cable"),
            (_COLOR, _PACK), (6.0, 45.0),
        ),
        ProductType(
            "bluetooth speaker", ("Bluetooth Speaker", "Portable Speaker"),
            ("Portable Audio & Video", "Portable Speakers"),
            ("Loud", "Outdoor", "Mini", "Waterproof"),
            ("with Deep Bass", "for Home", "with Stereo Sound"),
            (_COLOR, ("style", "style_electronics")), (15.0, 150.0),
        ),
        ProductType(
            "smart tv", ("Smart TV", "LED TV", "Television"),
            ("Television & Video", "Televisions"),
            ("Frameless", "Class", "Ultra Slim"),
            ("with Alexa", "with Streaming Apps", "with HDR"),
            (("size", "size_screen"), ("style", "style_electronics")), (150.0, 900.0),
        ),
        ProductType(
            "micro sd card", ("Micro SD Card", "Memory Card", "MicroSDXC Card"),
            ("Computers & Accessories", "Memory Cards", "Micro SD Cards"),
            ("Extreme", "Ultra", "Pro"),
            ("with Adapter", "for Nintendo Switch", "for Dash Cam"),
            (("capacity", "capacity"), _PACK), (6.0, 90.0),
        ),
        ProductType(
            "laptop stand", ("Laptop Stand", "Laptop Riser"),
            ("Computers & Accessories", "Laptop Accessories", "Stands"),
            ("Adjustable", "Ergonomic", "Foldable", "Ventilated"),
            ("for Desk", "for MacBook", "for 10 to 17 Inch Laptops"),
            (_COLOR,), (12.0, 70.0),
        ),
        ProductType(
            "hdmi cable", ("HDMI Cable", "HDMI Cord"),
            ("Accessories & Supplies", "Audio & Video Accessories", "Cables", "HDMI Cables"),
            ("Braided", "High Speed", "Gold Plated"),
            ("for TV", "for Gaming Console", "with Ethernet"),
            (("size", "size_cable"), _PACK, _COLOR), (5.0, 35.0),
        ),
        ProductType(
            "security camera", ("Security Camera", "Surveillance Camera", "Camera"),
            ("Camera & Photo", "Video Surveillance", "Surveillance Cameras"),
            ("Outdoor", "Indoor", "Wifi", "Night Vision"),
            ("with Motion Detection", "with Two Way Audio", "with Cloud Storage"),
            (("style", "style_electronics"), _PACK), (20.0, 250.0),
        ),
        ProductType(
            "power bank", ("Portable Power Bank", "Power Bank", "Battery Pack"),
            ("Cell Phones & Accessories", "Chargers & Power Adapters", "Portable Power Banks"),
            ("Slim", "Compact", "Rugged"),
            ("with LED Display", "for iPhone and Android", "for Camping"),
            (("capacity", "battery"), _COLOR), (12.0, 80.0),
        ),
        ProductType(
            "wireless mouse", ("Wireless Mouse", "Computer Mouse"),
            ("Computers & Accessories", "Keyboards, Mice & Accessories", "Mice"),
            ("Silent", "Ergonomic", "Rechargeable", "Slim"),
            ("for Laptop", "with USB Receiver", "for Office"),
            (_COLOR, ("style", "style_electronics")), (6.0, 60.0),
        ),
        ProductType(
            "tablet case", ("Tablet Case", "Folio Case", "Protective Cover"),
            ("Computers & Accessories", "Tablet Accessories", "Cases"),
            ("Slim", "Shockproof", "Rugged", "Leather"),
            ("with Pencil Holder", "with Stand", "with Auto Sleep Wake"),
            (("style", "style_device"), _COLOR), (8.0, 45.0),
        ),
    ),
)

_FASHION = Category(
    name="fashion",
    root="Clothing, Shoes & Jewelry",
    attributes=(
        "machine washable", "slim fit", "quick drying", "moisture wicking", "long sleeve",
        "short sleeve", "button closure", "elastic waist", "non slip", "rubber sole", "hand wash",
        "daily wear", "relaxed fit", "high waist", "lace closure", "soft material",
        "polyester cotton",
    ),
    claims=(
        "comfortable enough to wear all day",
        "true to size with a flattering cut",
        "easy to pair with your favorite outfits",
        "holds its shape wash after wash",
        "breathable fabric for every season",
        "a great gift for friends and family",
        "designed for work, travel and weekends",
        "stitched to last",
    ),
    types=(
        ProductType(
            "t-shirt", ("T-Shirt", "Tee Shirt", "Crew Neck T-Shirt"),
            ("Men", "Clothing", "Shirts", "T-Shirts"),
            ("Classic", "Graphic", "Basic", "Athletic"),
            ("for Men", "for Women", "Cotton Top"),
            (_SIZE, _COLOR, _PACK), (6.0, 35.0),
        ),
        ProductType(
            "running shoes", ("Running Shoes", "Athletic Shoes", "Trainers"),
            ("Men", "Shoes", "Athletic", "Running"),
            ("Lightweight", "Breathable", "Cushioned", "Trail"),
            ("for Men", "for Women", "for Walking and Gym"),
            (("size", "size_shoe"), _COLOR), (25.0, 150.0),
        ),
        ProductType(
            "jeans", ("Jeans", "Denim Jeans", "Skinny Jeans"),
            ("Women", "Clothing", "Jeans"),
            ("Stretch", "Vintage", "Distressed", "Straight Leg"),
            ("for Women", "for Men", "with Pockets"),
            (_SIZE, _COLOR), (18.0, 80.0),
        ),
        ProductType(
            "dress", ("Maxi Dress", "Summer Dress", "Casual Dress"),
            ("Women", "Clothing", "Dresses", "Casual"),
            ("Floral", "Flowy", "Wrap", "Boho"),
            ("for Women", "with Pockets", "for Beach and Party"),
            (_SIZE, _COLOR, ("pattern name", "pattern")), (18.0, 90.0),
        ),
        ProductType(
            "hoodie", ("Pullover Hoodie", "Hooded Sweatshirt", "Hoodie"),
            ("Men", "Clothing", "Active", "Sweatshirts"),
            ("Fleece", "Heavyweight", "Oversized", "Zip Up"),
            ("for Men", "for Women", "with Kangaroo Pocket"),
            (_SIZE, _COLOR), (15.0, 70.0),
        ),
        ProductType(
            "yoga leggings", ("Yoga Leggings", "Workout Leggings", "Yoga Pants"),
            ("Women", "Clothing", "Active", "Leggings"),
            ("Buttery Soft", "Compression", "Seamless"),
            ("for Women", "with Pockets", "for Running"),
            (_SIZE, _COLOR, _PACK), (10.0, 60.0),
        ),
        ProductType(
            "winter jacket", ("Winter Jacket", "Puffer Jacket", "Parka Coat"),
            ("Men", "Clothing", "Jackets & Coats"),
            ("Warm", "Insulated", "Waterproof", "Hooded"),
            ("for Men", "for Women", "with Removable Hood"),
            (_SIZE, _COLOR), (35.0, 220.0),
        ),
        ProductType(
            "socks", ("Crew Socks", "Athletic Socks", "Ankle Socks"),
            ("Men", "Clothing", "Socks & Hosiery", "Socks"),
            ("Cushioned", "Cotton", "Wool", "Low Cut"),
            ("for Men", "for Women", "for Hiking"),
            (_SIZE, _COLOR, _PACK), (5.0, 30.0),
        ),
        ProductType(
            "baseball cap", ("Baseball Cap", "Dad Hat", "Trucker Hat"),
            ("Men", "Accessories", "Hats & Caps", "Baseball Caps"),
            ("Adjustable", "Washed", "Vintage", "Mesh"),
            ("for Men", "for Women", "with Embroidered Logo"),
            (_COLOR, ("pattern name", "pattern")), (6.0, 30.0),
        ),
        ProductType(
            "sandals", ("Sandals", "Slide Sandals", "Flip Flops"),
            ("Women", "Shoes", "Sandals"),
            ("Comfort", "Platform", "Strappy", "Orthopedic"),
            ("for Women", "for Men", "with Arch Support"),
            (("size", "size_shoe"), _COLOR), (10.0, 70.0),
        ),
    ),
)

_FURNITURE = Category(
    name="furniture",
    root="Home & Kitchen",
    attributes=(
        "easy assemble", "solid wood", "living room", "storage space", "wall mounted",
        "easy clean", "mid century", "heavy duty", "high density", "space saving", "dining room",
        "bedroom furniture", "metal legs", "non slip", "engineered wood", "assembly required",
        "memory foam",
    ),
    claims=(
        "fits small apartments and large homes alike",
        "sturdy construction for years of use",
        "all hardware and tools included",
        "a timeless look for any room",
        "wipes clean with a damp cloth",
        "supports everyday family life",
        "ships in one box",
        "designed by our in-house team",
    ),
    types=(
        ProductType(
            "sofa", ("Sofa Couch", "Loveseat Sofa", "Sectional Sofa"),
            ("Furniture", "Living Room Furniture", "Sofas & Couches"),
            ("Modern", "Convertible", "Upholstered", "Tufted"),
            ("for Living Room", "with Pillows", "for Small Spaces"),
            (_COLOR, ("material", "material")), (150.0, 900.0),
        ),
        ProductType(
            "office chair", ("Office Chair", "Desk Chair", "Computer Chair"),
            ("Furniture", "Home Office Furniture", "Desk Chairs"),
            ("Ergonomic", "Swivel", "High Back", "Mesh"),
            ("with Lumbar Support", "with Armrests", "with Wheels"),
            (_COLOR, ("style", "style_furniture")), (40.0, 350.0),
        ),
        ProductType(
            "bookshelf", ("Bookshelf", "Bookcase", "Shelving Unit"),
            ("Furniture", "Home Office Furniture", "Bookcases"),
            ("5 Tier", "Ladder", "Corner", "Open"),
            ("for Bedroom", "with Doors", "for Home Office"),
            (("color", "color_wood"), ("size", "size_furniture")), (35.0, 300.0),
        ),
        ProductType(
            "coffee table", ("Coffee Table", "Center Table", "Cocktail Table"),
            ("Furniture", "Living Room Furniture", "Tables", "Coffee Tables"),
            ("Lift Top", "Round", "Rustic", "Glass"),
            ("for Living Room", "with Storage", "with Shelf"),
            (("color", "color_wood"), ("style", "style_furniture")), (50.0, 400.0),
        ),
        ProductType(
            "bed frame", ("Bed Frame", "Platform Bed", "Metal Bed Frame"),
            ("Furniture", "Bedroom Furniture", "Beds, Frames & Bases"),
            ("Upholstered", "Low Profile", "Wooden", "Canopy"),
            ("with Headboard", "with Storage Drawers", "No Box Spring Needed"),
            (("size", "size_bed"), ("color", "color_wood")), (80.0, 700.0),
        ),
        ProductType(
            "tv stand", ("TV Stand", "Entertainment Center", "Media Console"),
            ("Furniture", "Living Room Furniture", "TV & Media Furniture"),
            ("Modern", "Farmhouse", "Floating", "Low"),
            ("for TVs up to 65 Inch", "with Storage Cabinets", "with LED Lights"),
            (("color", "color_wood"), ("size", "size_furniture")), (60.0, 450.0),
        ),
        ProductType(
            "dining chairs", ("Dining Chairs", "Kitchen Chairs", "Side Chairs"),
            ("Furniture", "Kitchen & Dining Room Furniture", "Chairs"),
            ("Upholstered", "Armless", "Wooden", "Modern"),
            ("for Kitchen", "with Metal Legs", "for Dining Room"),
            (_COLOR, ("item package quantity", "set")), (50.0, 400.0),
        ),
        ProductType(
            "nightstand", ("Nightstand", "Bedside Table", "End Table"),
            ("Furniture", "Bedroom Furniture", "Nightstands"),
            ("Small", "Floating", "Two Drawer", "Rattan"),
            ("with Charging Station", "for Bedroom", "with Drawer"),
            (("color", "color_wood"), ("item package quantity", "set")), (30.0, 250.0),
        ),
        ProductType(
            "bar stools", ("Bar Stools", "Counter Stools", "Barstool"),
            ("Furniture", "Kitchen & Dining Room Furniture", "Stools"),
            ("Swivel", "Adjustable", "Backless", "Industrial"),
            ("with Back", "for Kitchen Island", "with Footrest"),
            (_COLOR, ("size", "size_stool")), (45.0, 350.0),
        ),
        ProductType(
            "area rug", ("Area Rug", "Shag Rug", "Runner Rug"),
            ("Home Decor", "Rugs, Pads & Protectors", "Area Rugs"),
            ("Soft", "Washable", "Vintage", "Boho"),
            ("for Living Room", "for Bedroom", "for Hallway"),
            (("size", "size_rug"), _COLOR, ("pattern name", "pattern")), (25.0, 400.0),
        ),
    ),
)

_GROCERY = Category(
    name="grocery",
    root="Grocery & Gourmet Food",
    attributes=(
        "gluten free", "non gmo", "sugar free", "low carb", "dairy free", "keto friendly",
        "high protein", "plant based", "ready to eat", "individually wrapped", "caffeine free",
        "usda organic", "low calorie", "kosher certified", "natural flavors", "great gift",
        "shelf stable",
    ),
    claims=(
        "a delicious snack for home, office or travel",
        "made in small batches for fresh taste",
        "sourced from trusted farms",
        "perfect for the whole family",
        "sealed for freshness",
        "no artificial colors or preservatives",
        "packed in a facility that follows strict quality standards",
        "a pantry staple you can count on",
    ),
    types=(
        ProductType(
            "ground coffee", ("Ground Coffee", "Coffee", "Whole Bean Coffee"),
            ("Beverages", "Coffee, Tea & Cocoa", "Coffee", "Ground Coffee"),
            ("Arabica", "Premium", "Smooth", "Bold"),
            ("for Drip Coffee Makers", "Single Origin", "for French Press"),
            (("flavor name", "flavor_coffee"), ("size", "size_weight"), _PACK), (6.0, 45.0),
        ),
        ProductType(
            "protein bars", ("Protein Bars", "Snack Bars", "Energy Bars"),
            ("Snack Foods", "Bars", "Protein"),
            ("Chewy", "Crunchy", "Whey", "Vegan"),
            ("with 20g Protein", "for Post Workout", "Variety Pack"),
            (("flavor name", "flavor"), _PACK), (10.0, 45.0),
        ),
        ProductType(
            "green tea", ("Green Tea Bags", "Green Tea", "Loose Leaf Tea"),
            ("Beverages", "Coffee, Tea & Cocoa", "Tea", "Green"),
            ("Japanese", "Pure", "Premium", "Antioxidant"),
            ("with Matcha", "for Iced Tea", "Assortment"),
            (("flavor name", "flavor_tea"), _PACK), (4.0, 30.0),
        ),
        ProductType(
            "olive oil", ("Extra Virgin Olive Oil", "Olive Oil"),
            ("Pantry Staples", "Cooking & Baking", "Oils", "Olive"),
            ("Cold Pressed", "Imported", "Mediterranean", "First Harvest"),
            ("for Cooking", "in Glass Bottle", "for Salad Dressing"),
            (("size", "size_volume"), _PACK), (8.0, 50.0),
        ),
        ProductType(
            "dark chocolate", ("Dark Chocolate Bar", "Dark Chocolate", "Chocolate Bar"),
            ("Candy & Chocolate", "Chocolate", "Bars"),
            ("72% Cacao", "Bittersweet", "Artisan", "Belgian"),
            ("with Almonds", "with Sea Salt", "Gift Box"),
            (("flavor name", "flavor"), _PACK), (4.0, 40.0),
        ),
        ProductType(
            "trail mix", ("Trail Mix", "Nut Mix", "Mixed Nuts"),
            ("Snack Foods", "Nuts & Seeds", "Trail Mix"),
            ("Roasted", "Deluxe", "Salted", "Sweet"),
            ("with Dried Fruit", "Snack Packs", "with Dark Chocolate"),
            (("flavor name", "flavor"), ("size", "size_weight"), _PACK), (6.0, 35.0),
        ),
        ProductType(
            "pasta", ("Spaghetti Pasta", "Penne Pasta", "Pasta"),
            ("Pantry Staples", "Pasta & Noodles", "Dry Pasta"),
            ("Italian", "Whole Wheat", "Bronze Cut", "Chickpea"),
            ("for Family Dinners", "Made in Italy", "Bulk"),
            (("size", "size_weight"), _PACK), (3.0, 30.0),
        ),
        ProductType(
            "honey", ("Raw Honey", "Honey", "Manuka Honey"),
            ("Pantry Staples", "Jams, Jellies & Sweet Spreads", "Honey"),
            ("Pure", "Unfiltered", "Wildflower", "Creamed"),
            ("in Squeeze Bottle", "with Honeycomb", "from Local Farms"),
            (("size", "size_weight"), ("flavor name", "flavor")), (6.0, 60.0),
        ),
        ProductType(
            "beef jerky", ("Beef Jerky", "Jerky", "Meat Snacks"),
            ("Meat & Seafood", "Jerky & Dried Meats", "Jerky"),
            ("Tender", "Thick Cut", "Grass Fed", "Smoked"),
            ("Snack Pack", "Resealable Bag", "for Hiking"),
            (("flavor name", "flavor_jerky"), ("size", "size_weight")), (6.0, 45.0),
        ),
        ProductType(
            "sparkling water", ("Sparkling Water", "Seltzer Water", "Flavored Sparkling Water"),
            ("Beverages", "Bottled Beverages, Water & Drink Mixes", "Water", "Sparkling"),
            ("Zero Calorie", "Refreshing", "Crisp", "Naturally Flavored"),
            ("in Cans", "Variety Pack", "12 oz Cans"),
            (("flavor name", "flavor_water"), _PACK), (5.0, 35.0),
        ),
        ProductType(
            "popcorn", ("Popcorn", "Microwave Popcorn", "Kettle Corn"),
            ("Snack Foods", "Popcorn", "Ready to Eat"),
            ("Gourmet", "Light", "Whole Grain", "Crunchy"),
            ("Snack Bags", "for Movie Night", "Family Size"),
            (("flavor name", "flavor_snack"), _PACK), (3.0, 30.0),
        ),
    ),
)

CATEGORIES: tuple[Category, ...] = (_BEAUTY, _ELECTRONICS, _FASHION, _FURNITURE, _GROCERY)
"""The shop's categories, in a fixed order."""

BRAND_SYLLABLES: tuple[str, ...] = (
    "al", "bel", "ca", "dor", "el", "fa", "gri", "ho", "ira", "jo", "ka", "lu", "mer", "no",
    "ori", "pax", "qui", "ro", "sol", "ta", "ul", "ve", "wyn", "xa", "yo", "zen", "tri", "mo",
    "ni", "sa", "pe", "lo", "ran", "tek", "vi", "ma",
)
BRAND_SUFFIXES: tuple[str, ...] = ("",) * 12 + (" Co", " Home", " Labs", " Pro", " Goods")

REVIEW_TITLES: tuple[tuple[int, str], ...] = (
    (5, "Love it"), (5, "Exactly what I needed"), (5, "Great value"), (4, "Works as described"),
    (4, "Pretty good"), (4, "Nice quality for the price"), (3, "It's okay"),
    (3, "Does the job"), (2, "Not what I expected"), (2, "Could be better"),
    (1, "Disappointed"), (1, "Would not buy again"),
)
"""Review titles by the star score they go with."""

REVIEW_BODIES: dict[int, tuple[str, ...]] = {
    5: (
        "The {noun} arrived quickly and is even better than the pictures.",
        "I bought this {noun} for my family and everyone loves it.",
        "Great {noun}, I already ordered a second one.",
    ),
    4: (
        "Good {noun} overall, a little smaller than I thought.",
        "Solid {noun} for the price, shipping took a few extra days.",
        "Happy with this {noun}, would recommend.",
    ),
    3: (
        "The {noun} is fine but nothing special.",
        "Average {noun}, it does what it says.",
    ),
    2: (
        "The {noun} looked different from the listing.",
        "Quality of the {noun} could be better for this price.",
    ),
    1: (
        "My {noun} stopped working after a week.",
        "The {noun} arrived damaged and I returned it.",
    ),
}
"""Review bodies by star score; ``{noun}`` is the product's head noun, lower-case."""
